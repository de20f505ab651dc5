"""qccl's collectives on torch tensors, under mpirun (2 and 4 ranks):
closed-form results, identical results on every rank, and clear errors."""

import torch
import torch.distributed as dist

import qccl
from mpi_world import run

SIZES = (1, 7, 1000, 4099)


def same_everywhere(tensor):
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return all(torch.equal(tensor, p) for p in parts)


def test_fp32_allreduce_mean_is_exact(rank, size):
    for n in SIZES:
        t = torch.full((n,), float(rank + 1))
        assert qccl.allreduce_mean_(t) is t
        assert torch.equal(t, torch.full((n,), (size + 1) / 2)), t[:4]


def test_quantized_allreduce_is_identical_everywhere_and_within_its_bound(rank, size):
    for n in SIZES:
        g = torch.Generator().manual_seed(rank)
        t = torch.randn(n, generator=g)
        exact = t.clone()
        dist.all_reduce(exact)
        exact /= size
        qccl.allreduce_mean_(t, "global-qsgd:bits=8", name=f"v{n}")
        assert same_everywhere(t)
        # Each rank's value is rounded to a level of M/s (M: the largest
        # |input| of any rank; s = 127 // ranks levels, so sums fit in
        # int8), so the mean is off by less than one level.
        largest = torch.tensor(float(torch.randn(n, generator=torch.Generator().manual_seed(rank))
                                     .abs().max()))
        dist.all_reduce(largest, op=dist.ReduceOp.MAX)
        levels = 127 // size
        bound = qccl.Compressor("global-qsgd:bits=8").error_bound(largest)
        assert abs(bound - largest / levels) <= 1e-6 * bound, (bound, largest / levels)
        assert (t - exact).abs().max() <= bound * (1 + 1e-5)


def test_reduce_scatter_gives_each_rank_its_block_of_the_mean(rank, size):
    compressor = qccl.Compressor("fp32")
    for n in SIZES:
        t = torch.arange(n, dtype=torch.float32) * (rank + 1)
        block = compressor.reduce_scatter_mean(t)
        first, count = compressor.blocks(n)[rank]
        expected = torch.arange(first, first + count, dtype=torch.float32) * (size + 1) / 2
        assert torch.allclose(block, expected, rtol=1e-6), (block[:4], expected[:4])
    assert sum(c for _, c in compressor.blocks(4099)) == 4099


def test_allgather_concatenates_every_rank_shard(rank, size):
    for n in SIZES:
        shard = torch.full((n,), float(rank))
        out = qccl.allgather(shard)
        expected = torch.cat([torch.full((n,), float(r)) for r in range(size)])
        assert torch.equal(out, expected)
        assert same_everywhere(qccl.allgather(torch.randn(n), "global-qsgd:bits=4"))


def test_device_path_on_the_host_reference_equals_the_host_path(rank, size):
    """The collectives' CUDA paths (the codec's device steps) run on CPU
    tensors through the device step's host reference: the host path's bits,
    two steps, for the codecs with a device step and both algorithms —
    allreduce_mean_, reduce_scatter_mean and (codecs that gather, shards
    of whole units of their codes) allgather; min-max's buckets are
    gathered and decoded on the device; a codec without one is refused on
    every rank, naming those that run."""
    units = {"global-qsgd:bits=4": 2, "minmax:bits=4,bucket=7,rounding=shift": 7}
    for codec in ("global-qsgd:bits=8", "global-qsgd:bits=4", "global-qsgd:dither=exp", "fp16",
                  "fp32", "intsgd-heuristic", "intsgd-heuristic:wire=int64",
                  "minmax:bits=4,bucket=7,rounding=shift"):
        gathers = not codec.startswith("intsgd")
        for algorithm in ("ring", "halving-doubling"):
            on_host = qccl.Compressor(codec, algorithm=algorithm, seed=3)
            on_device = qccl.Compressor(codec, algorithm=algorithm, seed=3)
            on_device._host_tensors = "host-reference"  # pylint: disable=protected-access
            for n in SIZES:
                g = torch.Generator().manual_seed(100 * rank + n)
                a = torch.randn(n, generator=g)
                b = a.clone()
                for _ in range(2):
                    assert on_device.allreduce_mean_(a) is a
                    on_host.allreduce_mean_(b)
                    assert torch.equal(a, b), f"{codec} {algorithm} n={n}: device path differs"
                    block = on_device.reduce_scatter_mean(a)
                    assert torch.equal(block, on_host.reduce_scatter_mean(b)), \
                        f"{codec} {algorithm} n={n}: device reduce-scatter differs"
                    if gathers and n % units.get(codec, 1) == 0:
                        gathered = on_device.allgather(a)
                        assert torch.equal(gathered, on_host.allgather(b)), \
                            f"{codec} {algorithm} n={n}: device allgather differs"
                        assert same_everywhere(gathered)
                assert same_everywhere(a)
    refused = qccl.Compressor("qsgd")
    refused._host_tensors = "host-reference"  # pylint: disable=protected-access
    for call in (refused.allreduce_mean_, refused.reduce_scatter_mean, refused.allgather):
        try:
            call(torch.ones(8))
        except qccl.InvalidArgument as error:
            assert "device" in str(error) and "global-qsgd" in str(error), error
        else:
            raise AssertionError(f"qsgd ran on the device path ({call.__name__})")


def test_bad_tensors_are_refused_naming_the_problem(rank, size):
    cases = ((torch.zeros(4, dtype=torch.float64), "dtype torch.float64"),
             (torch.zeros(4, 4).t(), "not contiguous"),
             ([1.0, 2.0], "must be a torch.Tensor"))
    for bad, expected in cases:
        try:
            qccl.allreduce_mean_(bad)
        except qccl.InvalidArgument as error:
            assert expected in str(error), error
            assert isinstance(error, ValueError)
        else:
            raise AssertionError(f"{expected}: accepted")


def test_lengths_that_differ_across_ranks_raise_on_every_rank(rank, size):
    t = torch.zeros(10 + (rank == 0))
    try:
        qccl.allreduce_mean_(t, name="mismatch")
    except qccl.MismatchError as error:
        assert "disagree" in str(error), error
    else:
        raise AssertionError("different lengths went through")


def test_nan_on_one_rank_raises_on_every_rank(rank, size):
    t = torch.ones(100)
    if rank == 0:
        t[5] = float("inf")
    try:
        qccl.allreduce_mean_(t, "global-qsgd:bits=8", name="nan")
    except qccl.NonFiniteError as error:
        assert "rank(s) 0" in str(error), error
    else:
        raise AssertionError("Inf went through")
    qccl.allreduce_mean_(torch.ones(100), "global-qsgd:bits=8", name="nan")  # still usable


def test_a_rank_that_never_calls_gives_a_timeout_naming_the_call(rank, size):
    """Last: the timed-out communicator is unusable afterwards."""
    if rank == 0:
        lonely = qccl.Compressor("fp32", timeout=1.5)
        try:
            lonely.allreduce_mean_(torch.ones(8))
        except qccl.TimeoutError as error:
            assert isinstance(error, TimeoutError) and "1500 ms" in str(error), error
        else:
            raise AssertionError("an allreduce without the other ranks completed")


if __name__ == "__main__":
    run([test_fp32_allreduce_mean_is_exact,
         test_quantized_allreduce_is_identical_everywhere_and_within_its_bound,
         test_reduce_scatter_gives_each_rank_its_block_of_the_mean,
         test_allgather_concatenates_every_rank_shard,
         test_device_path_on_the_host_reference_equals_the_host_path,
         test_bad_tensors_are_refused_naming_the_problem,
         test_lengths_that_differ_across_ranks_raise_on_every_rank,
         test_nan_on_one_rank_raises_on_every_rank,
         test_a_rank_that_never_calls_gives_a_timeout_naming_the_call])
