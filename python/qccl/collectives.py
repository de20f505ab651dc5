"""qccl's context and its collectives on torch tensors.

init() joins the ranks of the launcher that started the process: under
mpirun, MPI's (initialised here unless the program did it already); under
torchrun, torch.distributed's default process group (the process-group
mode: no MPI; the group's collectives move qccl's encoded data). Every collective is called by every rank in the same order
with the same codec and length (qccl checks that, and says which rank
differs). A Compressor is one codec instance: its state — the step counter
that keys the random rounding, error-feedback residuals, IntSGD's scales —
persists from call to call, and saves and loads with state_dict().

Threads may share the context and a Compressor: calls on the world
communicator run one at a time (a call waits up to its timeout for another
thread's), and every rank must still make them in the same order.
shutdown() from any thread waits for the call in flight; calls that start
after it raise InvalidArgument saying qccl was shut down.
"""

import atexit
import threading

from . import _launch
from ._native import native
from ._tensors import fp32_buffer
from .errors import InvalidArgument, TimeoutError  # pylint: disable=redefined-builtin


class _World:
    """The process's default context, as torch.distributed keeps its default
    group: set by init(), ended by shutdown() (also at exit)."""
    context = None
    compressors = {}  # (operation, codec, algorithm, seed, key) -> Compressor, for the functions below
    lock = threading.Lock()  # init() against init() on another thread


DEFAULT_TIMEOUT = 300.0
MAX_TIMEOUT = 30 * 24 * 3600.0  # as on the command line
AFTER_SHUTDOWN = ("qccl was shut down in this process (qccl.shutdown()); MPI cannot start again "
                  "in this process: make qccl's calls before qccl.shutdown(), and start a new "
                  "process (mpirun) for more")


def init(timeout=None):
    """Joins the ranks and returns the context. `timeout` (seconds, default
    300) bounds every wait: a rank that is gone or stuck gives a
    qccl.TimeoutError naming the operation, never a hang.

    Under mpirun: MPI's ranks (the MPI mode); if torch.distributed is
    initialised, its rank and world size must be mpirun's. Under torchrun
    (or when the program initialised torch.distributed itself): the
    process-group mode, on torch.distributed's default group, which init()
    initialises with gloo from torchrun's environment unless it is already.
    Started on its own, a process runs one rank, and init() says so on
    stderr.

    A process has one context: init() again returns it, and so does
    init(timeout=...) with the timeout it has; another timeout raises
    InvalidArgument naming both, since the context keeps its settings."""
    requested = None if timeout is None else float(timeout)
    if requested is not None and not 0 < requested <= MAX_TIMEOUT:  # NaN fails too
        raise InvalidArgument(f"qccl.init(timeout={timeout!r}): give a number of seconds in "
                              f"(0, {MAX_TIMEOUT:.0f}] (30 days)")
    wait = DEFAULT_TIMEOUT if requested is None else requested
    if not _World.lock.acquire(timeout=wait):
        raise TimeoutError(f"qccl.init(): another thread has been initialising qccl for {wait:g} "
                           "s (MPI_Init); is mpirun's launch stuck?")
    try:
        current = _World.context
        if current is not None:
            if current.closed:
                raise InvalidArgument(AFTER_SHUTDOWN)
            if requested is not None and requested != current.timeout:
                raise InvalidArgument(
                    f"qccl is already initialised with timeout={current.timeout:g} s, and "
                    f"qccl.init(timeout={requested:g}) asks for other settings; a process has one "
                    "qccl context, which keeps the settings it was created with: call "
                    f"qccl.init(timeout={current.timeout:g}) or qccl.init() to use it, or pass "
                    "the settings you want to the first qccl.init() (qccl.shutdown() ends MPI "
                    "for the whole process, so it cannot start qccl again)")
            return current
        context = _new_context(wait)
        _World.context = context
        atexit.register(shutdown)
    finally:
        _World.lock.release()
    check_matches_torch_distributed(context)
    return context


def _new_context(timeout):
    where = _launch.launcher()
    if where == "torchrun" or (where is None and _launch.torch_distributed_initialized()):
        return _launch.GroupContext(timeout)
    if where is None:
        _launch.say_one_rank()
    return native.Context(timeout)


def on_group():
    """True in the process-group mode (see init())."""
    return isinstance(context(), _launch.GroupContext)


def is_initialized():
    return _World.context is not None and not _World.context.closed


def shutdown():
    """Ends qccl and MPI (MPI cannot start again in this process); called
    at exit. Safe from any thread at any time: calls that start afterwards,
    on any thread, raise InvalidArgument saying qccl was shut down; the
    collective in flight on another thread, if any, is waited for (up to
    its timeout); then every hook created on the context closes, after its
    buckets in flight, and MPI ends."""
    context = _World.context
    if context is None:
        return
    _World.compressors.clear()
    context.close()  # idempotent; a second caller waits for the first


def context():
    """The default context; InvalidArgument before init()."""
    if _World.context is None:
        raise InvalidArgument("call qccl.init() first (in every rank, under mpirun or torchrun)")
    if _World.context.closed:
        raise InvalidArgument(AFTER_SHUTDOWN)
    return _World.context


def rank():
    return context().rank


def size():
    return context().size


def codecs():
    """(name, description) of every codec, as `qccl train --help` lists them."""
    return native.codec_catalog()


def check_matches_torch_distributed(ctx):
    """torch.distributed (if initialised) and mpirun must agree on who is who:
    the hook reduces over mpirun's ranks while DDP checks over torch's."""
    if isinstance(ctx, _launch.GroupContext) or not _launch.torch_distributed_initialized():
        return
    import torch.distributed as dist
    if (dist.get_rank(), dist.get_world_size()) != (ctx.rank, ctx.size):
        raise InvalidArgument(
            f"torch.distributed has rank {dist.get_rank()} of {dist.get_world_size()} but "
            f"mpirun started this process as rank {ctx.rank} of {ctx.size}; initialise "
            "torch.distributed with rank=qccl.rank() and world_size=qccl.size()")


class Compressor:
    """One codec instance on the world communicator (see the module doc)."""

    def __init__(self, codec="fp32", *, algorithm="ring", seed=0, timeout=None):
        ctx = context()
        wait = None if timeout is None else float(timeout)
        if on_group():
            # The process-group mode: the group's whole-vector collectives
            # (docs/pytorch.md); every rank creates its compressors in the
            # same order, the first one making the group's runner.
            self._native = native.Compressor(ctx.world(), codec, seed, algorithm, wait)
        else:
            self._native = native.Compressor(ctx, codec, seed, algorithm, wait)
        # CPU tensors: "host" (the host step), or "host-reference", the
        # device step's host reference, which runs the CUDA path on CPU
        # tensors (tests).
        self._host_tensors = "host"

    @property
    def codec(self):
        """The canonical spec, with every parameter."""
        return self._native.codec

    def allreduce_mean_(self, tensor):
        """Replaces `tensor` (float32, contiguous) by its mean over the
        ranks, bitwise identical on every rank; returns it. On a CUDA device
        (a qccl built with CUDA), the codec's device step runs on the
        current stream, with only the codes crossing to the host:
        the codecs with a device step, global-qsgd, fp16, fp32, intsgd,
        intsgd-heuristic and minmax with uniform levels (others
        are refused, naming them); the call
        returns when the mean is on the device."""
        memory = self._memory_of(tensor)
        tensor, address, count = fp32_buffer(tensor, "allreduce_mean_'s tensor", writable=True,
                                             devices=("cpu", "cuda"))
        if memory == "host":
            self._native.allreduce_mean(address, count)
            return tensor
        self._native.allreduce_mean_on_device(address, count, *_device_of(tensor, memory))
        return tensor

    def _memory_of(self, tensor):
        """Where a tensor's step runs: "cuda", or for a CPU tensor "host"
        (or the device step's host reference, in tests)."""
        return "cuda" if getattr(tensor, "is_cuda", False) else self._host_tensors

    def error_bound(self, inf_norm):
        """A bound |allreduce result - exact mean| never exceeds, for inputs
        whose largest |value| over all ranks is `inf_norm` (inf where the
        codec has none)."""
        return self._native.error_bound(float(inf_norm))

    def blocks(self, count):
        """(first, count) of each rank's block of a `count`-element vector."""
        return self._native.blocks(count)

    def reduce_scatter_mean(self, tensor):
        """This rank's block (blocks(numel)[rank]) of the mean over the ranks
        of the flattened `tensor`, as a new 1-d tensor on its device. On a
        CUDA device, the codec's device step on the current stream, as for
        allreduce_mean_."""
        import torch
        memory = self._memory_of(tensor)
        tensor, address, count = fp32_buffer(tensor, "reduce_scatter_mean's tensor",
                                             devices=("cpu", "cuda"))
        first_count = self.blocks(count)[context().rank][1]
        out = torch.empty(first_count, dtype=torch.float32, device=tensor.device)
        if memory == "host":
            self._native.reduce_scatter_mean(address, count, out.data_ptr(), first_count)
        else:
            self._native.step_on_device("reduce_scatter_mean", address, count, out.data_ptr(),
                                        first_count, *_device_of(tensor, memory))
        return out

    def allgather(self, shard):
        """Every rank's decoded `shard` (all of one length), concatenated in
        rank order, as a new 1-d tensor on its device, identical on every
        rank. On a CUDA device, the codec's device step on the current
        stream (codecs global-qsgd, fp16, fp32 and minmax with uniform
        levels; shards of whole units of their codes)."""
        import torch
        memory = self._memory_of(shard)
        shard, address, count = fp32_buffer(shard, "allgather's shard", devices=("cpu", "cuda"))
        out = torch.empty(count * context().size, dtype=torch.float32, device=shard.device)
        if memory == "host":
            self._native.allgather(address, count, out.data_ptr(), out.numel())
        else:
            self._native.step_on_device("allgather", address, count, out.data_ptr(), out.numel(),
                                        *_device_of(shard, memory))
        return out

    def state_dict(self):
        return {"codec": self.codec, "step": self._native.step, "state": self._native.save_state()}

    def load_state_dict(self, state):
        if state.get("codec") != self.codec:
            raise InvalidArgument(f"this state was saved by codec '{state.get('codec')}'; "
                                  f"this compressor runs '{self.codec}'")
        self._native.load_state(state["state"], state["step"])


def _device_of(tensor, memory):
    """(memory, CUDA stream, device index) of a device step on `tensor`:
    the current stream of its CUDA device (0, 0 for the host reference).
    A build without CUDA refuses "cuda", saying how to build one."""
    if memory != "cuda":
        return memory, 0, 0
    import torch
    return memory, torch.cuda.current_stream(tensor.device).cuda_stream, tensor.device.index or 0


def _compressor(operation, tensor, codec, name, algorithm, seed):
    """The default context's compressor for these settings; `name` or, by
    default, the tensor's shape tells tensors apart."""
    key = name if name is not None else ("shape",) + tuple(getattr(tensor, "shape", ()))
    k = (operation, codec, algorithm, seed, key)
    compressor = _World.compressors.get(k)
    if compressor is None:  # setdefault: threads that race here share the first one stored
        compressor = _World.compressors.setdefault(
            k, Compressor(codec, algorithm=algorithm, seed=seed))
    return compressor


def allreduce_mean_(tensor, codec="fp32", *, name=None, algorithm="ring", seed=0):
    """Replaces `tensor` by its (compressed) mean over the ranks. The codec's
    state persists per (operation, codec, algorithm, seed, name) — by
    default per tensor shape; give tensors of one shape their own `name` to keep their
    error-feedback residuals apart."""
    return _compressor("allreduce", tensor, codec, name, algorithm, seed).allreduce_mean_(tensor)


def reduce_scatter_mean(tensor, codec="fp32", *, name=None, algorithm="ring", seed=0):
    """This rank's block of the mean over the ranks (Compressor.reduce_scatter_mean)."""
    return _compressor("reduce-scatter", tensor, codec, name, algorithm, seed).reduce_scatter_mean(tensor)


def allgather(shard, codec="fp32", *, name=None, algorithm="ring", seed=0):
    """Every rank's decoded shard in rank order (Compressor.allgather)."""
    return _compressor("allgather", shard, codec, name, algorithm, seed).allgather(shard)
