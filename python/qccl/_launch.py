"""Which launcher started this process, and qccl's context when torchrun
did: the process-group mode, where the ranks are torch.distributed's and
qccl starts no MPI."""

import datetime
import os
import sys
import weakref

# Set by Open MPI's and MPICH's (Hydra, PMIx) launchers in every rank.
MPI_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launcher():
    """"mpirun", "torchrun" (or another launcher that sets torch's env://
    rendezvous variables), or None for a process started on its own."""
    if any(name in os.environ for name in MPI_VARIABLES):
        return "mpirun"
    if "TORCHELASTIC_RUN_ID" in os.environ or all(
            name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return "torchrun"
    return None


def torch_distributed_initialized():
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_initialized()


def say_one_rank():
    print("qccl: this process was not started by mpirun or torchrun, so qccl runs one rank "
          "(launch with `torchrun --nproc_per_node N script.py` or `mpirun -np N python3 "
          "script.py` for N)", file=sys.stderr, flush=True)


class GroupContext:
    """qccl's context in the process-group mode: torch.distributed's default
    group (initialised here with gloo and env:// unless the program did it)
    gives the ranks; hooks exchange through the group they are given."""

    def __init__(self, timeout):
        import torch.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group(backend="gloo", init_method="env://",
                                    timeout=datetime.timedelta(seconds=max(timeout, 1.0)))
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.timeout = timeout
        self.closed = False
        self._hooks = []  # weak references to the hooks' states, closed with the context

    def add_hook(self, state):
        self._hooks.append(weakref.ref(state))

    def close(self):
        """Closes every hook made on the context, all of them even if one
        fails (then its error is raised after); torch.distributed's group
        stays the program's (destroy_process_group ends it)."""
        self.closed = True
        hooks, self._hooks = self._hooks, []
        failures = []
        for ref in hooks:
            state = ref()
            if state is None:
                continue
            try:
                state.close()
            except Exception as error:  # pylint: disable=broad-except
                failures.append(error)
        if failures:
            raise failures[0]
