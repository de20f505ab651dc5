"""qccl's DDP communication hook, under mpirun (2 and 4 ranks): the
specification of docs/pytorch.md's hook, test by test."""

import copy
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import qccl
from ddp_checks import (check_device_bucket_path, check_fp32_hook_matches_ddp,
                        check_half_bucket_in_chunks,
                        check_nan_on_one_rank_reaches_backward, half_dtypes, mlp)
from mpi_world import run


def batch(rank, step, n=16):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(n, 40, generator=g), torch.randint(0, 5, (n,), generator=g)


def backward(model, rank, step):
    x, y = batch(rank, step)
    nn.functional.cross_entropy(model(x), y).backward()


def wrapped(seed, codec=None, bucket_mb=0.005, optimizer_for=None, **hook_options):
    """A DDP model (several buckets: 5 KB cap), with qccl's hook unless codec is None."""
    model = DDP(mlp(seed), bucket_cap_mb=bucket_mb)
    state = None
    if codec is not None:
        optimizer = optimizer_for(model) if optimizer_for else None
        state, hook = qccl.ddp_hook(model, codec=codec, optimizer=optimizer, **hook_options)
        model.register_comm_hook(state, hook)
        return model, state, optimizer
    return model, state, None


def gathered(tensor):
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return parts


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_fp32_hook_gives_ddp_default_gradients(rank, size):
    reference, _, _ = wrapped(seed=1)
    hooked, _, _ = wrapped(seed=1, codec="fp32")
    check_fp32_hook_matches_ddp(reference, hooked, lambda m, step: backward(m, rank, step), size)


def train(model, optimizer, rank, steps, first=0):
    for step in range(first, first + steps):
        optimizer.zero_grad()
        backward(model, rank, step)
        optimizer.step()


def test_stochastic_codecs_keep_replicas_bitwise_identical(rank, size):
    for codec in ("global-qsgd:bits=4", "qsgd", "ef(global-qsgd:bits=4)", "randk:ratio=0.1"):
        model, _, _ = wrapped(seed=2, codec=codec)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        train(model, optimizer, rank, steps=6)
        mine = flat_parameters(model)
        for other, theirs in enumerate(gathered(mine)):
            assert torch.equal(mine, theirs), f"{codec}: rank {other}'s parameters differ"
        assert not torch.equal(mine, flat_parameters(mlp(2))), f"{codec}: nothing was trained"


def test_every_codec_of_qccl_train_works_in_the_hook(rank, size):
    """Each codec of the registry, with its defaults, for three SGD steps:
    every rank ends with the same parameters."""
    names = [name for name, _ in qccl.codecs()]
    assert len(names) >= 20 and "global-qsgd" in names and "powersgd" in names, names
    for name in names:
        codec = "ef(global-qsgd:bits=4)" if name == "ef" else name
        sgd = lambda model: torch.optim.SGD(model.parameters(), lr=0.01)  # noqa: E731
        model, state, optimizer = wrapped(seed=9, codec=codec, optimizer_for=sgd)
        train(model, optimizer, rank, steps=3)
        mine = flat_parameters(model)
        for other, theirs in enumerate(gathered(mine)):
            assert torch.equal(mine, theirs), f"{state.codec}: rank {other}'s parameters differ"
        assert torch.isfinite(mine).all(), state.codec


def test_quantized_hook_sends_fewer_bytes(rank, size):
    sent = {}
    for codec in ("fp32", "global-qsgd:bits=8", "global-qsgd:bits=4"):
        model, state, _ = wrapped(seed=3, codec=codec)
        backward(model, rank, 0)
        sent[codec] = state.bytes_sent
    assert sent["fp32"] > 3.5 * sent["global-qsgd:bits=8"] > 0, sent
    assert sent["global-qsgd:bits=8"] > 1.6 * sent["global-qsgd:bits=4"], sent


def test_native_algorithm_counts_bytes_and_compression(rank, size):
    """MPI's own allreduce reports no bytes: the hook counts what a ring
    allreduce of the buckets sends, 2(n−1)/n of their fp32 bytes."""
    model, state, _ = wrapped(seed=13, codec="fp32", algorithm="native")
    backward(model, rank, 0)
    elements = sum(p.numel() for p in model.parameters())
    assert state.bytes_sent == ring_bytes(elements * 4, size), state.bytes_sent
    assert state.compression_ratio == 1.0


def ring_bytes(encoded, size):
    return 2 * (size - 1) * encoded // size if size > 1 else 0


def test_half_precision_buckets_keep_replicas_identical(rank, size):
    """The MPI mode with fp16 gradients (and bf16 where gloo broadcasts it,
    PyTorch 2): averaged in fp32 on qccl's stream, written back in the
    bucket's dtype before DDP reads it."""
    for dtype in half_dtypes():
        model = DDP(mlp(14, dtype), bucket_cap_mb=0.005)
        state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8")
        model.register_comm_hook(state, hook)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        before = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
        for step in range(3):
            optimizer.zero_grad()
            x, y = batch(rank, step)
            nn.functional.cross_entropy(model(x).float(), y).backward()
            assert all(p.grad.dtype == dtype for p in model.parameters())
            optimizer.step()
        mine = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
        assert not torch.equal(before, mine), f"{dtype}: nothing moved"
        for r, theirs in enumerate(gathered(mine)):
            assert torch.equal(theirs, mine), f"{dtype}: rank {r} differs"


def test_half_bucket_goes_chunk_by_chunk(rank, size):
    check_half_bucket_in_chunks(rank, size)


def test_device_bucket_path_runs_on_the_host_reference(rank, size):
    check_device_bucket_path(rank, size)


def test_intsgd_follows_the_optimizer(rank, size):
    sgd = lambda model: torch.optim.SGD(model.parameters(), lr=0.05)  # noqa: E731
    model, state, optimizer = wrapped(seed=4, codec="intsgd", optimizer_for=sgd)
    train(model, optimizer, rank, steps=5)
    mine = flat_parameters(model)
    for theirs in gathered(mine):
        assert torch.equal(mine, theirs)
    try:
        qccl.ddp_hook(model, codec="intsgd")
    except qccl.InvalidArgument as error:
        assert "optimizer=" in str(error), error
    else:
        raise AssertionError("intsgd without an optimizer was accepted")


def test_state_survives_save_and_load(rank, size):
    """Top-k with error feedback keeps a residual per parameter: a run saved
    after 3 steps and resumed in a new model, optimizer and hook ends where
    an uninterrupted run does, bitwise. Per-tensor selection: with the
    default group selection the k largest of a bucket depend on which
    parameters share it, and DDP rebuilds its buckets after the first
    iteration of a model, so a resumed run's first step sees other buckets
    (docs/pytorch.md, checkpoints)."""
    codec = "topk:ratio=0.05,ef=on,select=tensor"
    make_optimizer = lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)  # noqa: E731
    whole, _, _ = wrapped(seed=5, codec=codec)
    whole_optimizer = make_optimizer(whole)
    train(whole, whole_optimizer, rank, steps=6)

    first, first_state, _ = wrapped(seed=5, codec=codec)
    first_optimizer = make_optimizer(first)
    train(first, first_optimizer, rank, steps=3)
    checkpoint = copy.deepcopy({"model": first.state_dict(), "optimizer": first_optimizer.state_dict(),
                                "qccl": first_state.state_dict()})
    resumed, resumed_state, _ = wrapped(seed=99, codec=codec)
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer = make_optimizer(resumed)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed_state.load_state_dict(checkpoint["qccl"])
    train(resumed, resumed_optimizer, rank, steps=3, first=3)
    assert torch.equal(flat_parameters(resumed), flat_parameters(whole)), "resume differs"

    # Without the residuals the run differs: the test can tell.
    forgetful, _, _ = wrapped(seed=99, codec=codec)
    forgetful.load_state_dict(checkpoint["model"])
    forgetful_optimizer = make_optimizer(forgetful)
    forgetful_optimizer.load_state_dict(checkpoint["optimizer"])
    train(forgetful, forgetful_optimizer, rank, steps=3, first=3)
    assert not torch.equal(flat_parameters(forgetful), flat_parameters(whole))

    try:
        other, other_state, _ = wrapped(seed=5, codec="fp16")
        other_state.load_state_dict(checkpoint["qccl"])
    except qccl.InvalidArgument as error:
        assert "saved with codec 'topk" in str(error), error
    else:
        raise AssertionError("a state of another codec was accepted")


def test_bad_specs_raise_on_every_rank(rank, size):
    model = DDP(mlp(6))
    for spec, expected in (("zip", "unknown codec 'zip'"),
                           ("global-qsgd:bits=9", "bits=9 is not valid"),
                           ("fp32:level=3", "level")):
        try:
            qccl.ddp_hook(model, codec=spec)
        except qccl.InvalidArgument as error:
            assert expected in str(error), f"{spec}: {error}"
        else:
            raise AssertionError(f"{spec} was accepted")
    try:
        qccl.ddp_hook(model, codec="global-qsgd", algorithm="native")
    except qccl.InvalidArgument as error:
        assert "ring or halving-doubling" in str(error), error
    else:
        raise AssertionError("a quantized codec on native was accepted")


def test_nonfinite_gradients_raise_on_every_rank(rank, size):
    model, _, _ = wrapped(seed=7, codec="global-qsgd:bits=8")
    check_nan_on_one_rank_reaches_backward(model, lambda: batch(rank, 0), rank, size)


def test_codecs_that_differ_across_ranks_raise_on_every_rank(rank, size):
    codec = "global-qsgd:bits=8" if rank == 0 else "global-qsgd:bits=4"
    model, _, _ = wrapped(seed=8, codec=codec)
    try:
        backward(model, rank, 0)
    except qccl.MismatchError as error:
        # Which ranks differ, and this rank's codec.
        assert "disagree on 'codec'" in str(error) and codec in str(error), error
    else:
        raise AssertionError("ranks with different codecs went through")


def test_a_rank_that_stops_gives_a_timeout_not_a_hang(rank, size):
    """Last: rank 0's hook stream is unusable after its timeout. The other
    ranks never run backward; rank 0's backward raises after 2 s."""
    model, _, _ = wrapped(seed=10, codec="global-qsgd:bits=8", timeout=2)
    if rank != 0:
        return
    started = time.monotonic()
    try:
        backward(model, rank, 0)
    except RuntimeError as error:
        assert "2000 ms" in str(error), error
    else:
        raise AssertionError("a bucket without the other ranks completed")
    assert time.monotonic() - started < 30


if __name__ == "__main__":
    run([test_fp32_hook_gives_ddp_default_gradients,
         test_stochastic_codecs_keep_replicas_bitwise_identical,
         test_every_codec_of_qccl_train_works_in_the_hook,
         test_quantized_hook_sends_fewer_bytes,
         test_native_algorithm_counts_bytes_and_compression,
         test_half_precision_buckets_keep_replicas_identical,
         test_half_bucket_goes_chunk_by_chunk,
         test_device_bucket_path_runs_on_the_host_reference,
         test_intsgd_follows_the_optimizer,
         test_state_survives_save_and_load,
         test_bad_specs_raise_on_every_rank,
         test_nonfinite_gradients_raise_on_every_rank,
         test_codecs_that_differ_across_ranks_raise_on_every_rank,
         test_a_rank_that_stops_gives_a_timeout_not_a_hang])
