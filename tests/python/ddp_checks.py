"""What the DDP hook's tests share, in either mode: half-precision models
PyTorch 1.13 can run on CPUs, and the fp32 hook checked against DDP's own
allreduce."""

import torch
import torch.nn as nn


def half_dtypes():
    """The half-precision dtypes DDP runs on gloo: PyTorch 1.13's gloo has no
    bfloat16 (DDP's first broadcast fails with "Invalid scalar type")."""
    major = int(torch.__version__.split(".")[0])
    return (torch.bfloat16, torch.float16) if major >= 2 else (torch.float16,)


class StoredIn(nn.Module):
    """A linear layer whose parameters are stored in a half type and
    computed with in fp32 (PyTorch 1.13 has no fp16 matmul on CPUs): its
    gradients, and so DDP's buckets, are in the half type."""

    def __init__(self, layer, dtype):
        super().__init__()
        self.weight = nn.Parameter(layer.weight.detach().to(dtype))
        self.bias = nn.Parameter(layer.bias.detach().to(dtype))

    def forward(self, x):
        return nn.functional.linear(x.float(), self.weight.float(), self.bias.float())


def mlp(seed, dtype=torch.float32):
    """The tests' MLP (40 inputs, 5 classes); in a half type, with its
    linear layers StoredIn it."""
    torch.manual_seed(seed)
    layers = [nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 5)]
    if dtype in (torch.bfloat16, torch.float16):
        layers = [StoredIn(m, dtype) if isinstance(m, nn.Linear) else m for m in layers]
    return nn.Sequential(*layers).to(dtype)


def check_fp32_hook_matches_ddp(reference, hooked, backward, size, steps=3):
    """`hooked` (the fp32 codec) gets DDP's own gradients (`reference`) over
    `steps` backward passes — step 0 with the first buckets, later ones with
    the rebuilt buckets — within a few ulps of the largest gradient: the
    same sums in another order. backward(model, step) runs one pass."""
    for step in range(steps):
        for model in (reference, hooked):
            model.zero_grad()
            backward(model, step)
        for (name, p), q in zip(reference.named_parameters(), hooked.parameters()):
            scale = p.grad.abs().max().item() + 1e-30
            worst = (p.grad - q.grad).abs().max().item()
            assert worst <= 8 * size * 1.2e-7 * scale, f"step {step} {name}: differs by {worst}"


def check_nan_on_one_rank_reaches_backward(model, batch, rank, size):
    """NaN in the last rank's input: backward() raises qccl.NonFiniteError on
    every rank, with qccl's message (not DDP's "Unable to cast ... to
    Tensor"). batch() gives this rank's (inputs, labels)."""
    import qccl
    x, y = batch()
    if rank == size - 1:
        x[0, 0] = float("nan")
    try:
        nn.functional.cross_entropy(model(x), y).backward()
    except qccl.NonFiniteError as error:
        assert "NaN or Inf" in str(error) and "Unable to cast" not in str(error), error
    else:
        raise AssertionError("NaN gradients on one rank went through")


def check_half_bucket_in_chunks(rank, size):
    """One half-precision bucket in chunks of about 1000 elements (whole
    parameters; the 2560- and 2048-element weights alone): the chunks cover
    the bucket in order; the fp32 codec's mean is DDP's within the half
    type's rounding; 8-bit Global-QSGD and IntSGD (which reads each chunk's
    parameters) keep replicas identical over three SGD steps, for each half
    type gloo runs."""
    from qccl._native import native
    sizes = [p.numel() for p in mlp(17).parameters()]
    assert native.parameter_chunks(sizes, 1000) == [
        (0, 2560, 0, 1), (2560, 64, 1, 2), (2624, 2048, 2, 3), (4672, 197, 3, 6)]
    for dtype in half_dtypes():
        _check_half_chunks_of(dtype, rank, size)


def _check_half_chunks_of(dtype, rank, size):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import qccl

    def backward(model, step):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(16, 40, generator=g).to(dtype), torch.randint(0, 5, (16,), generator=g)
        nn.functional.cross_entropy(model(x).float(), y).backward()

    unit = 2 ** -8 if dtype == torch.bfloat16 else 2 ** -11
    reference = DDP(mlp(17, dtype), bucket_cap_mb=25)
    for codec in ("fp32", "global-qsgd:bits=8", "intsgd"):
        model = DDP(mlp(17, dtype), bucket_cap_mb=25)
        sgd = torch.optim.SGD(model.parameters(), lr=0.05)
        state, hook = qccl.ddp_hook(model, codec=codec, optimizer=sgd)
        state.half_chunk = 1000
        model.register_comm_hook(state, hook)
        if codec == "fp32":
            for m in (reference, model):
                backward(m, 0)
            for p, q in zip(reference.parameters(), model.parameters()):
                assert q.grad.dtype == dtype
                scale = p.grad.float().abs().max().item() + 1e-30
                worst = (p.grad.float() - q.grad.float()).abs().max().item()
                assert worst <= size * unit * scale, f"differs by {worst}"
            continue
        for step in range(3):
            sgd.zero_grad()
            backward(model, step)
            sgd.step()
        mine = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
        parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, mine)
        for r, theirs in enumerate(parts):
            assert torch.equal(theirs, mine), f"{codec} in chunks: rank {r} differs"


def check_device_bucket_path(rank, size):
    """The hook's GPU path — the codec's device step on the bucket, a half
    bucket widened to one fp32 copy and its mean written back — run on CPU
    tensors through the device step's host reference, so it is checked
    without a GPU (a GPU runs the same path on CUDA memory: docs/gpu.md):
    - fp32 buckets: the same parameters, bit for bit, as the host path over
      three SGD steps (DDP's first and rebuilt buckets), replicas identical
      (min-max too: every rank's encoding gathered and decoded);
      for intsgd, whose optimizer feedback arrives as squared updates that
      PyTorch sums here and qccl sums in order there, within a ten-
      thousandth of the parameters' scale of it (the scales may differ in
      their last bits), and away from the exact fp32 mean (so the
      feedback arrived and the later steps were integer ones);
    - half buckets: replicas identical, each gradient DDP's own mean within
      the half type's rounding and fp16's (codec fp16);
    - codecs without a device step are refused, naming what runs."""
    import qccl
    from torch.nn.parallel import DistributedDataParallel as DDP

    def backward(model, step, dtype=torch.float32):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(16, 40, generator=g).to(dtype), torch.randint(0, 5, (16,), generator=g)
        nn.functional.cross_entropy(model(x).float(), y).backward()

    def hooked(seed, codec, memory, dtype=torch.float32):
        model = DDP(mlp(seed, dtype), bucket_cap_mb=0.005)
        sgd = torch.optim.SGD(model.parameters(), lr=0.05)
        state, hook = qccl.ddp_hook(model, codec=codec, optimizer=sgd)
        state._set_host_buckets(memory)  # pylint: disable=protected-access
        model.register_comm_hook(state, hook)
        return model, state, sgd

    results = {}
    for codec in ("global-qsgd:bits=8", "global-qsgd:bits=8,norm=2", "fp16", "fp32",
                  "intsgd-heuristic", "intsgd", "minmax:bucket=64,rounding=shift"):
        trained = {}
        for memory in ("host", "host-reference"):
            model, state, sgd = hooked(21, codec, memory)
            for step in range(3):
                sgd.zero_grad()
                backward(model, step)
                sgd.step()
            trained[memory] = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            elements = sum(p.numel() for p in model.parameters())
            reduced = state._native.elements_reduced  # pylint: disable=protected-access
            assert reduced == 3 * elements, (codec, memory, reduced)
        if codec == "intsgd":
            scale = trained["host"].abs().max().item()
            worst = (trained["host"] - trained["host-reference"]).abs().max().item()
            assert worst <= 1e-4 * scale, f"intsgd: the device path differs by {worst}"
            assert not torch.equal(trained["host-reference"], results["fp32"]), \
                "intsgd took no integer step on the device path (no optimizer feedback?)"
        else:
            assert torch.equal(trained["host"], trained["host-reference"]), \
                f"{codec}: the device path differs from the host path"
        results[codec] = trained["host-reference"]
        _check_replicas(trained["host-reference"], codec)
        assert not torch.equal(trained["host"], torch.cat(
            [p.detach().reshape(-1) for p in mlp(21).parameters()])), f"{codec}: nothing moved"

    for dtype in half_dtypes():
        unit = 2 ** -8 if dtype == torch.bfloat16 else 2 ** -11
        reference = DDP(mlp(22, dtype), bucket_cap_mb=0.005)
        model, _, _ = hooked(22, "fp16", "host-reference", dtype)
        for m in (reference, model):
            backward(m, 0, dtype)
        for (name, p), q in zip(reference.named_parameters(), model.parameters()):
            assert q.grad.dtype == dtype, name
            scale = p.grad.float().abs().max().item() + 1e-30
            worst = (p.grad.float() - q.grad.float()).abs().max().item()
            assert worst <= size * (unit + 2 ** -11) * scale, f"{dtype} {name}: differs by {worst}"
        _check_replicas(torch.cat([p.grad.float().reshape(-1) for p in model.parameters()]),
                        f"fp16 on {dtype} buckets")

    model = DDP(mlp(23), bucket_cap_mb=0.005)
    state, _ = qccl.ddp_hook(model, codec="qsgd")
    try:
        state._set_host_buckets("host-reference")  # pylint: disable=protected-access
    except qccl.InvalidArgument as error:
        assert "device" in str(error) and "global-qsgd" in str(error), error
    else:
        raise AssertionError("qsgd was accepted for device buckets")


def _check_replicas(mine, what):
    import torch.distributed as dist
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    for r, theirs in enumerate(parts):
        assert torch.equal(theirs, mine), f"{what}: rank {r} differs"
