"""The operations qccl's process-group transport runs on a torch.distributed
process group (python/src/group_transport.h): each takes qccl's memory as a
memoryview, wraps it in a tensor without copying, and waits for the group
up to the timeout given (seconds), raising TimeoutError when it runs out."""

import datetime
import time

from .errors import InvalidArgument, TimeoutError  # pylint: disable=redefined-builtin


def _torch():
    import torch
    import torch.distributed as dist
    return torch, dist


_TYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32",
          "i8": "int8"}


def _wait(work, seconds, what):
    try:
        finished = work.wait(datetime.timedelta(seconds=seconds))
    except RuntimeError as e:
        if "timed out" in str(e).lower() or "timeout" in str(e).lower():
            raise TimeoutError(f"{what} on the process group did not complete within {seconds:g} "
                               f"s ({e}); did every rank reach this bucket?") from None
        raise
    if finished is False:
        raise TimeoutError(f"{what} on the process group did not complete within {seconds:g} s; "
                           "did every rank reach this bucket?")
    return True


# Why every tensor handed to the group outlives the call that handed it.
# A gloo group's worker thread keeps its own reference to a collective's
# work, and with it to the work's tensors, until a moment after wait()
# returns here. If Python has dropped its references by then, the worker is
# the one that frees the tensors, and freeing a tensor Python has seen takes
# the GIL (PyTorch keeps the tensor's Python object alive for its C++
# owners, and frombuffer's tensor holds a memoryview). While this thread
# holds the GIL in the group's destructor, which joins the workers, the
# process hangs; once the interpreter is finalising, the worker aborts it
# ("terminate called without an active exception"). So the tensors stay referenced here
# until the group's threads have let them go — Tensor._use_count() back to
# 1, this reference — and are freed here, under the GIL; release() waits for
# the last ones before the hook's group can end. A PyTorch without
# _use_count (1.13, where no late free was seen) keeps the last call's
# tensors only: holding more would keep large allgather buffers alive.
# One call at a time: the native side runs the group's operations under
# its runner's mutex, and close() takes it before release().
class _HandedTensors:
    """The tensors handed to the group that its threads may still hold."""

    def __init__(self, torch):
        self._exact = hasattr(torch.Tensor, "_use_count")
        self._held = []

    def __len__(self):
        return len(self._held)

    def add(self, *tensors):
        if not self._exact:
            self._held = list(tensors)  # the previous call's go
            return
        self.drop_released()
        self._held.extend(tensors)

    def drop_released(self):
        if self._exact:
            self._held = [t for t in self._held if t._use_count() > 1]

    def release(self, seconds):
        """Waits until the group's threads hold none of the tensors
        (sleeping without the GIL between checks), then drops them;
        TimeoutError after `seconds`, the rest still referenced here."""
        deadline = time.monotonic() + seconds
        self.drop_released()
        while self._exact and self._held:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the process group's threads still hold {len(self._held)} of qccl's tensors "
                    f"{seconds:g} s after their collectives completed; is a gloo worker stuck? "
                    "qccl keeps them referenced while the hook's state lives")
            time.sleep(0.001)
            self.drop_released()


DELETION_WAIT = 10.0  # seconds


class GroupOps:
    """qccl's transport operations on `group` (None: the default group).
    `timeout` (seconds) bounds the wait for the group's threads to let go
    of qccl's tensors in release(); deletion waits up to
    DELETION_WAIT of it."""

    def __init__(self, group=None, timeout=60.0):
        torch, dist = _torch()
        self._torch, self._dist, self.group = torch, dist, group
        self._handed = _HandedTensors(torch)
        self.timeout = timeout
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        if group is None or group == dist.group.WORLD:
            self._global_ranks = list(range(self.size))
        else:
            lookup = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
            self._global_ranks = [lookup(group, r) for r in range(self.size)]
        self._ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}

    def _tensor(self, view, type_name="i8"):
        dtype = getattr(self._torch, _TYPES[type_name])
        if len(view) == 0:
            return self._torch.empty(0, dtype=dtype)
        return self._torch.frombuffer(view, dtype=dtype)

    def _handed_tensor(self, view, type_name="i8"):
        """A tensor over `view` for the group, held until it lets go."""
        tensor = self._tensor(view, type_name)
        self._handed.add(tensor)
        return tensor

    @property
    def held(self):
        """How many handed tensors are still referenced here."""
        return len(self._handed)

    def release(self, seconds=None):
        """Waits up to `seconds` (default: the ops' timeout) until the
        group's threads hold none of qccl's tensors, and drops them: call
        before the group can end (the hook's close does)."""
        self._handed.release(self.timeout if seconds is None else seconds)

    def __del__(self):
        # In garbage collection, on any thread: a short wait. After it, or
        # with modules gone at interpreter exit, the tensors are dropped
        # as they are.
        try:
            self.release(min(self.timeout, DELETION_WAIT))
        except Exception:  # pylint: disable=broad-except
            pass

    # Point to point: (work, tensor), the tensor kept alive with its work.
    def isend(self, peer, tag, view):
        tensor = self._handed_tensor(view)
        return self._dist.isend(tensor, self._global_ranks[peer], group=self.group, tag=tag), tensor

    def irecv(self, peer, tag, view):
        tensor = self._handed_tensor(view)
        return self._dist.irecv(tensor, self._global_ranks[peer], group=self.group, tag=tag), tensor

    @staticmethod
    def done(pending):
        return pending[0].is_completed()

    @staticmethod
    def wait(pending, seconds):
        return _wait(pending[0], seconds, "a message")

    def allreduce(self, view, type_name, op, seconds):
        if len(view) == 0:
            return
        tensor = self._handed_tensor(view, type_name)
        work = self._dist.all_reduce(tensor, op=self._ops[op], group=self.group, async_op=True)
        _wait(work, seconds, f"an allreduce of {tensor.numel()} {type_name}")

    def allgather(self, mine, out, counts, seconds):
        """Every rank's bytes (counts[r] of them) into `out`, in rank order;
        the group gathers equal sizes, so each is padded to the largest."""
        largest = max(counts)
        if largest == 0:
            return
        torch = self._torch
        padded = torch.zeros(largest, dtype=torch.int8)
        padded[:len(mine)] = self._tensor(mine)
        gathered = [torch.empty(largest, dtype=torch.int8) for _ in range(self.size)]
        self._handed.add(padded, *gathered)
        work = self._dist.all_gather(gathered, padded, group=self.group, async_op=True)
        _wait(work, seconds, f"an allgather of {largest} bytes")
        result = self._tensor(out)
        offset = 0
        for count, part in zip(counts, gathered):
            result[offset:offset + count] = part[:count]
            offset += count

    def barrier(self, seconds):
        _wait(self._dist.barrier(group=self.group, async_op=True), seconds, "a barrier")


def host_memory_group(group):
    """A group that moves qccl's messages, which are in host memory (on a
    GPU, the device step stages its codes in pinned host buffers): `group`
    itself where its backend takes CPU tensors (gloo, mpi, or a combined
    "cpu:gloo,cuda:nccl" one); for an NCCL group, a gloo group over the
    same processes, made by dist.new_group, which every process calls at the
    same point — as it creates its hooks, in the same order on every rank.
    An NCCL group that is not the whole world is refused, naming the fix."""
    _, dist = _torch()
    if str(dist.get_backend(group)).lower() != "nccl":
        return group
    if dist.get_world_size(group) != dist.get_world_size():
        raise InvalidArgument(
            "the DDP model's process group uses NCCL, which moves only CUDA tensors, and covers "
            "only some of the processes: pass qccl.ddp_hook(..., process_group=...) a gloo group "
            "over the same ranks (torch.distributed.new_group(ranks, backend='gloo'))")
    return dist.new_group(backend="gloo")
