"""qccl's DDP hook and collectives in the process-group mode, under
torchrun with gloo (2 and 4 ranks): qccl encodes and decodes,
torch.distributed's group moves the data (docs/pytorch.md)."""

import faulthandler
import gc
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import qccl
from ddp_checks import (check_device_bucket_path, check_fp32_hook_matches_ddp,
                        check_half_bucket_in_chunks,
                        check_nan_on_one_rank_reaches_backward, half_dtypes, mlp)
from mpi_world import run_tests

# Every codec the mode carries, by how: integer SUM allreduce, allgather of
# encodings, the group's fp32 allreduces.
SUMMED = ("global-qsgd:bits=8", "intsgd", "intsgd:wire=int32")
GATHERED = ("qsgd", "minmax", "topk:ratio=0.1", "ef(signsgd)", "natural")
FP_SUMS = ("fp32", "fp16", "powersgd:rank=2")


def batch(rank, step, n=16, dtype=torch.float32):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(n, 40, generator=g).to(dtype), torch.randint(0, 5, (n,), generator=g)


def backward(model, rank, step, dtype=torch.float32):
    x, y = batch(rank, step, dtype=dtype)
    nn.functional.cross_entropy(model(x).float(), y).backward()


def wrapped(seed, codec=None, dtype=torch.float32, optimizer=False, **ddp_options):
    """A DDP model with several buckets (5 KB cap), with qccl's hook unless
    codec is None; and its SGD optimizer."""
    model = DDP(mlp(seed, dtype), bucket_cap_mb=0.005, **ddp_options)
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    state = None
    if codec is not None:
        state, hook = qccl.ddp_hook(model, codec=codec, optimizer=sgd if optimizer else None)
        model.register_comm_hook(state, hook)
    return model, sgd, state


def flat_parameters(model):
    return torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])


def assert_replicas_identical(model, what):
    mine = flat_parameters(model)
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    for r, theirs in enumerate(parts):
        assert torch.equal(theirs, mine), f"{what}: rank {r}'s parameters differ from this rank's"


def train(model, sgd, rank, steps, dtype=torch.float32):
    for step in range(steps):
        sgd.zero_grad()
        backward(model, rank, step, dtype)
        sgd.step()


def test_mode_is_process_group(rank, size):
    assert (qccl.rank(), qccl.size()) == (dist.get_rank(), dist.get_world_size()) == (rank, size)
    _, _, state = wrapped(1, "fp32")
    assert state.process_group_mode


def test_fp32_hook_gives_ddp_default_gradients(rank, size):
    reference, _, _ = wrapped(seed=1)
    hooked, _, state = wrapped(seed=1, codec="fp32")
    check_fp32_hook_matches_ddp(reference, hooked, lambda m, step: backward(m, rank, step), size)
    assert state.bytes_sent > 0 and state.compression_ratio == 1.0


def test_every_supported_codec_keeps_replicas_bitwise_identical(rank, size):
    for codec in SUMMED + GATHERED + FP_SUMS:
        model, sgd, state = wrapped(seed=2, codec=codec, optimizer=codec.startswith("intsgd"))
        train(model, sgd, rank, steps=5)
        assert_replicas_identical(model, codec)
        assert state.bytes_sent > 0, codec
        assert torch.isfinite(flat_parameters(model)).all(), codec


def test_every_codec_of_the_registry_runs_or_is_refused(rank, size):
    """Every codec `qccl train` accepts, with its defaults: either three
    steps with bitwise identical replicas, or refused at ddp_hook() time
    naming the MPI mode; never a hang or replicas that differ."""
    ran, refused = [], []
    specs = [name for name, _ in qccl.codecs() if name != "ef"] + ["ef(global-qsgd:bits=4)"]
    for name in specs:  # ef wraps a codec: with the one the registry's message suggests
        model = DDP(mlp(15), bucket_cap_mb=0.005)
        sgd = torch.optim.SGD(model.parameters(), lr=0.05)
        try:
            state, hook = qccl.ddp_hook(model, codec=name, optimizer=sgd)
        except qccl.InvalidArgument as error:
            assert "MPI mode" in str(error), f"{name}: {error}"
            refused.append(name)
            continue
        model.register_comm_hook(state, hook)
        train(model, sgd, rank, steps=3)
        assert_replicas_identical(model, name)
        ran.append(name)
    if rank == 0:
        print(f"ran {' '.join(ran)}; refused {' '.join(refused)}", flush=True)
    assert len(ran) > len(refused)


def test_eight_bit_codec_compresses_four_to_one(rank, size):
    model, sgd, state = wrapped(seed=3, codec="global-qsgd:bits=8")
    train(model, sgd, rank, steps=2)
    assert state.compression_ratio == 4.0, state.compression_ratio


def test_global_qsgd_mean_is_within_its_bound(rank, size):
    """One bucket: the hook's mean against the exact mean (DDP's own
    allreduce) is within one quantization level of a rank, G/s, where G is
    the largest |gradient| over all ranks and s = ⌊127/n⌋ the levels per
    rank, so that n·s fits int8 (Global-QSGD §4.3): each rank's stochastic
    rounding moves its value by less than one level, and so does the mean."""
    model = DDP(mlp(4), bucket_cap_mb=25)
    state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8")
    model.register_comm_hook(state, hook)
    reference = DDP(mlp(4), bucket_cap_mb=25)
    local = mlp(4)
    for m in (model, reference, local):
        backward(m, rank, 0)
    largest = torch.tensor([max(p.grad.abs().max().item() for p in local.parameters())])
    dist.all_reduce(largest, op=dist.ReduceOp.MAX)
    bound = largest.item() / (127 // size) * (1 + 1e-5)
    for p, q in zip(reference.parameters(), model.parameters()):
        worst = (p.grad - q.grad).abs().max().item()
        assert worst <= bound, f"differs by {worst} > {bound}"


def test_ring_only_codec_is_refused_naming_the_mpi_mode(rank, size):
    model = DDP(mlp(5))
    for codec in ("global-qsgd:bits=8,dither=exp", "global-qsgd:bits=4"):
        try:
            qccl.ddp_hook(model, codec=codec)
        except qccl.InvalidArgument as error:
            assert "MPI mode" in str(error) and "mpirun" in str(error), str(error)
        else:
            raise AssertionError(f"{codec} was not refused")


def test_bf16_and_fp16_models_train_with_identical_replicas(rank, size):
    for dtype in half_dtypes():
        model, sgd, state = wrapped(seed=6, codec="global-qsgd:bits=8", dtype=dtype)
        before = flat_parameters(model)
        train(model, sgd, rank, steps=4, dtype=dtype)
        assert all(p.dtype == dtype for p in model.parameters())
        assert not torch.equal(before, flat_parameters(model)), f"{dtype}: nothing moved"
        assert_replicas_identical(model, str(dtype))


def test_half_mean_is_the_fp32_mean_rounded(rank, size):
    """fp32 codec on a half-precision model: each gradient is the rounding of
    the fp32 mean of the ranks' gradients; DDP's own allreduce sums in the
    half type, so the two agree within a rounding of each partial sum: n
    units in the last place (2^-8 of the value for bf16, 2^-11 for fp16)."""
    for dtype, unit in ((torch.bfloat16, 2 ** -8), (torch.float16, 2 ** -11)):
        if dtype not in half_dtypes():
            continue
        reference, _, _ = wrapped(seed=7, dtype=dtype)
        hooked, _, _ = wrapped(seed=7, codec="fp32", dtype=dtype)
        for model in (reference, hooked):
            backward(model, rank, 0, dtype)
        for p, q in zip(reference.parameters(), hooked.parameters()):
            assert q.grad.dtype == dtype
            scale = p.grad.float().abs().max().item() + 1e-30
            worst = (p.grad.float() - q.grad.float()).abs().max().item()
            assert worst <= size * unit * scale, f"{dtype}: differs by {worst}"


def test_half_bucket_goes_chunk_by_chunk(rank, size):
    check_half_bucket_in_chunks(rank, size)


def test_device_bucket_path_runs_on_the_host_reference(rank, size):
    check_device_bucket_path(rank, size)


def test_amp_autocast_with_fp32_gradients(rank, size):
    model, sgd, _ = wrapped(seed=8, codec="global-qsgd:bits=8")
    for step in range(3):
        sgd.zero_grad()
        x, y = batch(rank, step)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        assert all(p.grad.dtype == torch.float32 for p in model.parameters())
        sgd.step()
    assert_replicas_identical(model, "autocast")


def test_float64_model_is_refused_at_hook_time(rank, size):
    model = DDP(mlp(9, torch.float64))
    try:
        qccl.ddp_hook(model, codec="fp32")
    except qccl.InvalidArgument as error:
        assert "torch.float64" in str(error) and "model.float()" in str(error), str(error)
    else:
        raise AssertionError("a float64 model was not refused")


def test_nccl_model_group_exchanges_over_a_gloo_group_beside_it(rank, size):
    """A DDP model on an NCCL group (as on GPUs): NCCL moves only CUDA
    tensors and qccl's codes are in host memory, so the hook makes a gloo
    group over the same ranks and exchanges there; replicas stay identical.
    No NCCL here: the backend the hook reads is made to say "nccl". An NCCL
    group over some of the ranks is refused, naming the fix."""
    from qccl import _group_ops
    model, sgd, _ = wrapped(seed=31)
    made, real_backend, real_new_group = [], dist.get_backend, dist.new_group
    sub = dist.new_group(ranks=[0]) if size > 1 else None  # every rank calls new_group
    nccl_groups = (model.process_group, sub)

    def new_group(*args, **kwargs):
        made.append(kwargs.get("backend"))
        return real_new_group(*args, **kwargs)
    dist.get_backend = lambda group=None: "nccl" if group in nccl_groups else real_backend(group)
    dist.new_group = new_group
    try:
        state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8")
        if sub is not None:
            try:
                _group_ops.host_memory_group(sub)
            except qccl.InvalidArgument as error:
                assert "gloo group" in str(error), error
            else:
                raise AssertionError("an NCCL group over some ranks was accepted")
    finally:
        dist.get_backend, dist.new_group = real_backend, real_new_group
    assert made == ["gloo"], made
    model.register_comm_hook(state, hook)
    train(model, sgd, rank, steps=2)
    assert state.bytes_sent > 0 or size == 1
    assert_replicas_identical(model, "over the gloo group beside NCCL")


def test_no_sync_accumulates_then_averages(rank, size):
    """Two micro-batches under no_sync() then one synchronised: the mean of
    the accumulated gradients, as DDP's own allreduce gives it."""
    reference, _, _ = wrapped(seed=10)
    hooked, _, _ = wrapped(seed=10, codec="fp32")
    for model in (reference, hooked):
        with model.no_sync():
            backward(model, rank, 0)
            backward(model, rank, 1)
        backward(model, rank, 2)
    for p, q in zip(reference.parameters(), hooked.parameters()):
        scale = p.grad.abs().max().item() + 1e-30
        assert (p.grad - q.grad).abs().max().item() <= 8 * size * 1.2e-7 * scale


def test_static_graph(rank, size):
    model, sgd, _ = wrapped(seed=11, codec="qsgd", static_graph=True)
    train(model, sgd, rank, steps=4)
    assert_replicas_identical(model, "static_graph")


def test_failure_reaches_backward_as_the_qccl_exception(rank, size):
    model, _, _ = wrapped(seed=12, codec="global-qsgd:bits=8")
    check_nan_on_one_rank_reaches_backward(model, lambda: batch(rank, 0), rank, size)


def test_group_ends_safely_right_after_qccl_used_it(rank, size):
    """A gloo worker lets go of a collective's tensors a moment after its
    wait returns; had qccl dropped them first, the worker would free them
    and take the GIL for it, which hangs the process when this thread holds
    the GIL while the group's destructor joins the workers (and aborts it at
    interpreter exit). qccl keeps them until the workers let go and the
    hook's close() waits for that (_group_ops.py). Each round ends a group
    right after qccl's collectives with this thread keeping the GIL (a 5 s
    switch interval); without the hold a round hangs (it did in 2 of 2
    runs), which the watchdog turns into a failure with every thread's
    traceback."""
    from qccl import _group_ops
    exact = hasattr(torch.Tensor, "_use_count")  # PyTorch 2: released when let go
    interval = sys.getswitchinterval()
    faulthandler.dump_traceback_later(90, exit=True)  # the rounds take about 10 s
    sys.setswitchinterval(5.0)
    try:
        for _ in range(6):
            group = dist.new_group(backend="gloo")
            ops = _group_ops.GroupOps(group, timeout=30)
            data = bytearray(4096)
            for _ in range(3):
                ops.allreduce(memoryview(data), "i8", "sum", 30)
            ops.allgather(memoryview(data)[:8], memoryview(bytearray(8 * size)), [8] * size, 30)
            ops.release()
            assert ops.held == 0 or not exact, f"{ops.held} tensors still held after release()"
            dist.destroy_process_group(group)
            del ops, group  # the group's destructor joins its workers here
        group = dist.new_group(backend="gloo")
        model = DDP(mlp(17), process_group=group)
        state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8", process_group=group)
        model.register_comm_hook(state, hook)
        backward(model, rank, 0)
        state.close()
        assert state._group_ops.held == 0 or not exact, "the hook's close() left tensors held"
        dist.destroy_process_group(group)
        del model, state, hook, group
        gc.collect()
    finally:
        sys.setswitchinterval(interval)
        faulthandler.cancel_dump_traceback_later()


def test_context_close_closes_every_hook_even_if_one_fails(rank, size):
    """qccl.shutdown()'s close of the process-group context closes every
    hook, also after one of them fails (here its wait for gloo's threads
    runs out), and then raises that failure."""
    from qccl import _launch
    ctx = _launch.GroupContext(60)
    states = []
    for seed in (18, 19):
        model = DDP(mlp(seed))
        state, hook = qccl.ddp_hook(model, codec="fp32")
        model.register_comm_hook(state, hook)
        ctx.add_hook(state)
        states.append(state)

    def stuck(seconds=None):
        raise qccl.TimeoutError("a gloo worker still holds 1 of qccl's tensors")
    states[0]._group_ops.release = stuck
    try:
        ctx.close()
    except qccl.TimeoutError as error:
        assert "still holds" in str(error), error
    else:
        raise AssertionError("the context's close did not raise the hook's failure")
    finally:
        del states[0]._group_ops.release  # the class's again, for qccl.shutdown()
    for state in states:
        try:
            state.state_dict()
        except qccl.InvalidArgument as error:
            assert "closed" in str(error), error
        else:
            raise AssertionError("a hook stayed open after the context's close")


def same_on_every_rank(tensor):
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return all(torch.equal(p, tensor) for p in parts)


def test_collectives_run_on_the_group(rank, size):
    """qccl's collectives on tensors in the process-group mode: fp32 sums of
    integers and the gathered shards are exact; Global-QSGD 8-bit's summed
    levels are exact integers, so its reduce-scatter block is the same
    step's allreduce mean's block bit for bit (same seed and step); every
    result is the same on every rank; a hop-by-hop encoding's reduce is
    refused naming the MPI mode and its allgather runs."""
    n = 1001
    ints = torch.arange(n, dtype=torch.float32) % 17 - 8 + rank
    exact = torch.arange(n, dtype=torch.float32) % 17 - 8 + (size - 1) / 2
    mean = qccl.allreduce_mean_(ints.clone())
    assert torch.equal(mean, exact), "fp32 allreduce mean of integers"
    first, count = qccl.Compressor().blocks(n)[rank]
    assert torch.equal(qccl.reduce_scatter_mean(ints.clone()), exact[first:first + count])
    shard = torch.full((5,), float(rank))
    assert torch.equal(qccl.allgather(shard),
                       torch.cat([torch.full((5,), float(r)) for r in range(size)]))
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(n, generator=g)
    whole, scattered, gathering = (qccl.Compressor("global-qsgd:bits=8", seed=4) for _ in range(3))
    blocks = whole.blocks(n)
    for _ in range(2):
        averaged = whole.allreduce_mean_(x.clone())
        block = scattered.reduce_scatter_mean(x)
        first, count = blocks[rank]
        assert torch.equal(block, averaged[first:first + count]), "global-qsgd reduce-scatter"
        assert same_on_every_rank(averaged)
        gathered = gathering.allgather(x[:6])
        assert same_on_every_rank(gathered) and gathered.numel() == 6 * size
    four_bit = qccl.Compressor("global-qsgd:bits=4")
    try:
        four_bit.reduce_scatter_mean(x)
    except qccl.InvalidArgument as error:
        assert "MPI mode" in str(error), error
    else:
        raise AssertionError("a hop-by-hop encoding was reduce-scattered over the group")
    assert same_on_every_rank(four_bit.allgather(x[:8]))


def test_collectives_device_path_on_the_host_reference_over_the_group(rank, size):
    """The CUDA paths of the collectives (the device steps, on the host
    reference) over the group: the host path's bits, two steps."""
    for codec in ("global-qsgd:bits=8", "fp16", "fp32", "intsgd-heuristic",
                  "minmax:bits=4,bucket=7,rounding=shift"):
        on_host = qccl.Compressor(codec, seed=3)
        on_device = qccl.Compressor(codec, seed=3)
        on_device._host_tensors = "host-reference"  # pylint: disable=protected-access
        for n in (7, 1001):
            g = torch.Generator().manual_seed(100 * rank + n)
            a = torch.randn(n, generator=g)
            b = a.clone()
            for _ in range(2):
                on_device.allreduce_mean_(a)
                on_host.allreduce_mean_(b)
                assert torch.equal(a, b), f"{codec} n={n}: device allreduce differs"
                assert torch.equal(on_device.reduce_scatter_mean(a), on_host.reduce_scatter_mean(b)), \
                    f"{codec} n={n}: device reduce-scatter differs"
                if not codec.startswith("intsgd"):
                    gathered = on_device.allgather(a)
                    assert torch.equal(gathered, on_host.allgather(b)), \
                        f"{codec} n={n}: device allgather differs"
                    assert same_on_every_rank(gathered)


def test_a_rank_that_stops_gives_a_timeout_not_a_hang(rank, size):
    """Last: only rank 0 runs backward; its hook's wait for the others ends
    after the hook's 2 s with qccl.TimeoutError from backward()."""
    model = DDP(mlp(16))
    state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8", timeout=2)
    model.register_comm_hook(state, hook)
    if rank != 0:
        return
    started = time.monotonic()
    try:
        backward(model, rank, 0)
    except qccl.TimeoutError as error:
        assert "did not complete within 2 s" in str(error), error
    else:
        raise AssertionError("a bucket without the other ranks completed")
    assert time.monotonic() - started < 30


TESTS = [test_mode_is_process_group, test_fp32_hook_gives_ddp_default_gradients,
         test_every_supported_codec_keeps_replicas_bitwise_identical,
         test_every_codec_of_the_registry_runs_or_is_refused,
         test_eight_bit_codec_compresses_four_to_one, test_global_qsgd_mean_is_within_its_bound,
         test_ring_only_codec_is_refused_naming_the_mpi_mode,
         test_bf16_and_fp16_models_train_with_identical_replicas,
         test_half_mean_is_the_fp32_mean_rounded, test_half_bucket_goes_chunk_by_chunk,
         test_device_bucket_path_runs_on_the_host_reference,
         test_amp_autocast_with_fp32_gradients,
         test_float64_model_is_refused_at_hook_time,
         test_nccl_model_group_exchanges_over_a_gloo_group_beside_it,
         test_no_sync_accumulates_then_averages,
         test_static_graph, test_failure_reaches_backward_as_the_qccl_exception,
         test_group_ends_safely_right_after_qccl_used_it,
         test_context_close_closes_every_hook_even_if_one_fails,
         test_collectives_run_on_the_group,
         test_collectives_device_path_on_the_host_reference_over_the_group,
         test_a_rank_that_stops_gives_a_timeout_not_a_hang]


def main():
    qccl.init(timeout=60)
    torch.set_num_threads(1)
    # The ranks meet at the end on a group of their own: the last test
    # leaves rank 0's default group with a receive that timed out.
    ending = dist.new_group(backend="gloo")
    only = set(sys.argv[1:])
    run_tests([t for t in TESTS if not only or t.__name__ in only], qccl.rank(), qccl.size())
    dist.barrier(group=ending)
    qccl.shutdown()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
