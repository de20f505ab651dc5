"""The operations qccl's process-group transport runs on a torch.distributed
process group (python/src/group_transport.h): each takes qccl's memory as a
memoryview, wraps it in a tensor without copying, and waits for the group
up to the timeout given (seconds), raising TimeoutError when it runs out."""

import datetime

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


class GroupOps:
    """qccl's transport operations on `group` (None: the default group)."""

    def __init__(self, group=None):
        torch, dist = _torch()
        self._torch, self._dist, self.group = torch, dist, group
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

    # Point to point: (work, tensor), the tensor kept alive with its work.
    def isend(self, peer, tag, view):
        tensor = self._tensor(view)
        return self._dist.isend(tensor, self._global_ranks[peer], group=self.group, tag=tag), tensor

    def irecv(self, peer, tag, view):
        tensor = self._tensor(view)
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
        tensor = self._tensor(view, type_name)
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
