"""Joins qccl and torch.distributed (gloo) under mpirun, for the Python
tests: qccl from mpirun's environment, torch.distributed on a file store
named after mpirun's job, so concurrent test runs never share one."""

import os
import sys
import tempfile

import torch
import torch.distributed as dist

import qccl


def join():
    qccl.init(timeout=60)
    dist.init_process_group("gloo", init_method=f"file://{dist_store_path()}", rank=qccl.rank(),
                            world_size=qccl.size())
    torch.set_num_threads(1)
    return qccl.rank(), qccl.size()


def run(tests):
    """Joins, runs `tests` (run_tests) and leaves."""
    rank, size = join()
    run_tests(tests, rank, size)
    dist.barrier()
    dist.destroy_process_group()
    qccl.shutdown()
    if rank == 0 and os.path.exists(dist_store_path()):
        os.remove(dist_store_path())


def run_tests(tests, rank, size):
    """Runs `tests` (functions of rank and size) in order on every rank;
    exits 1 on the first failure, naming it (every rank runs the same
    sequence of collectives, so the others stop at their next one)."""
    for test in tests:
        try:
            test(rank, size)
        except Exception as error:  # pylint: disable=broad-except
            print(f"FAIL {test.__name__} on rank {rank} of {size}: {type(error).__name__}: {error}",
                  file=sys.stderr, flush=True)
            os._exit(1)  # the others would wait for this rank
        if rank == 0:
            print(f"ok {test.__name__} ({size} ranks)", flush=True)


def dist_store_path():
    job = os.environ.get("PMIX_NAMESPACE") or os.environ.get("OMPI_MCA_ess_base_jobid") or "solo"
    return os.path.join(tempfile.gettempdir(), f"qccl-python-test-{job}")
