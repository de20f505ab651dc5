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
