"""Which launcher started this process, and qccl's context when torchrun
did: the process-group mode, where the ranks are torch.distributed's,
qccl starts no MPI, and the group's collectives move qccl's data."""

import datetime
import os
import sys
import threading
import weakref

from .errors import InvalidArgument

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
        self._world = None  # (native runner, GroupOps) of the compressors, made by world()
        self._world_lock = threading.Lock()

    def add_hook(self, state):
        self._hooks.append(weakref.ref(state))

    def world(self):
        """The native runner of qccl's collectives on the default group
        (qccl.Compressor and its functions), which every compressor shares;
        made at the first compressor, at the same point on every rank. An
        NCCL default group moves only CUDA tensors, and qccl's messages are
        in host memory, so the runner goes over a gloo group beside it
        (host_memory_group). Threads that race here get the one made first:
        a second runner would not take turns with it, and on NCCL a second
        gloo group would be made on this rank only."""
        with self._world_lock:
            if self.closed:
                raise InvalidArgument("qccl was shut down in this process (qccl.shutdown()); "
                                      "make qccl's calls before it")
            if self._world is None:
                from ._group_ops import GroupOps, host_memory_group
                from ._native import native
                ops = GroupOps(host_memory_group(None), timeout=self.timeout)
                self._world = (native.GroupWorld(ops, self.timeout), ops)
            return self._world[0]

    def close(self):
        """Closes every hook made on the context and the compressors'
        runner, all of them even if one fails (then its error is raised
        after); torch.distributed's group stays the program's
        (destroy_process_group ends it)."""
        self.closed = True
        hooks, self._hooks = self._hooks, []
        failures = []
        with self._world_lock:
            made, self._world = self._world, None
        if made is not None:
            world, ops = made
            try:
                world.close()  # waits for a call in flight
                ops.release()  # the group's threads let go of qccl's tensors
            except Exception as error:  # pylint: disable=broad-except
                failures.append(error)
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
