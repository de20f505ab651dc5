"""qccl's DDP communication hook.

    state, hook = qccl.ddp_hook(ddp_model, codec="global-qsgd:bits=8")
    ddp_model.register_comm_hook(state, hook)

DDP calls the hook with each gradient bucket, in bucket order on every rank.
The hook hands the bucket to qccl's communication thread and returns a
torch.futures.Future at once; qccl averages the bucket across the ranks with
the codec (bitwise identical on every rank) and completes the future, while
backward goes on — DDP's overlap is kept. A failure (NaN/Inf on some rank,
ranks with different codecs, a timeout) completes the future with the qccl
exception, which DDP raises from backward on every rank.

The codec's state is kept per parameter (by name), so it survives DDP's
bucket rebuild; state.state_dict() and load_state_dict() save and restore it
with the model's checkpoint.
"""

from ._native import native
from ._tensors import fp32_buffer
from .collectives import check_matches_torch_distributed, context
from .errors import InvalidArgument


class DDPHookState:
    """The hook's state: which parameter is which, the codec of each bucket,
    and the optimizer whose learning rate codecs like IntSGD adapt to."""

    def __init__(self, model, codec, algorithm, seed, timeout, optimizer):
        module = getattr(model, "module", model)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise InvalidArgument("the model has no parameters that require gradients")
        self._number = {id(p): i for i, (_, p) in enumerate(named)}
        ctx = context()
        check_matches_torch_distributed(ctx)
        self._native = native.BucketHook(ctx, codec, seed, algorithm,
                                         None if timeout is None else float(timeout),
                                         [n for n, _ in named], [list(p.shape) for _, p in named])
        self._optimizer = optimizer  # the context closes the hook at shutdown
        if self._native.wants_step_feedback and optimizer is None:
            raise InvalidArgument(
                f"'{self._native.codec}' adapts to the optimizer's steps (IntSGD §4): pass "
                "optimizer=your_optimizer to qccl.ddp_hook")

    @property
    def codec(self):
        """The canonical codec spec, with every parameter."""
        return self._native.codec

    @property
    def bytes_sent(self):
        """Data bytes this rank's hook has sent so far."""
        return self._native.bytes_sent

    def state_dict(self):
        """The codec state of every bucket and parameter (waits for buckets
        in flight)."""
        return {"codec": self.codec, "native": self._native.save_state()}

    def close(self):
        """Ends the hook: buckets handed to it afterwards, and state_dict(),
        raise InvalidArgument saying it was closed; the buckets already
        queued complete first (each within the hook's timeout). Safe from
        any thread, also while another one hands it buckets; idempotent.
        qccl.shutdown() and deleting the state close it too."""
        self._native.close()

    def load_state_dict(self, state):
        """Restores state_dict()'s result; call before the first backward."""
        if state.get("codec") != self.codec:
            raise InvalidArgument(f"this hook state was saved with codec '{state.get('codec')}'; "
                                  f"this hook runs '{self.codec}'")
        self._native.load_state(state["native"])

    def _step_size(self):
        if self._optimizer is None:
            return None
        rates = {group["lr"] for group in self._optimizer.param_groups}
        if len(rates) != 1:
            raise InvalidArgument("the optimizer's parameter groups have different learning "
                                  f"rates {sorted(rates)}; the hook's codec needs one")
        return float(rates.pop())

    def _reduce(self, bucket):
        import torch
        gradients, address, count = fp32_buffer(bucket.buffer(), "the gradient bucket",
                                                writable=True)
        parameters = bucket.parameters()
        try:
            numbers = [self._number[id(p)] for p in parameters]
        except KeyError:
            raise InvalidArgument("a bucket holds a parameter the hook was not created for: "
                                  "pass the DDP model whose hook this is to qccl.ddp_hook") from None
        values = [p.detach().data_ptr() for p in parameters] \
            if self._native.wants_step_feedback else []
        future = torch.futures.Future()

        def done(error):
            if error is None:
                future.set_result(gradients)
            else:
                future.set_exception(error)

        self._native.submit(bucket.index(), address, count, numbers, values, self._step_size(),
                            done)
        return future


def _hook(state, bucket):
    return state._reduce(bucket)  # pylint: disable=protected-access


def ddp_hook(model, codec="fp32", *, algorithm="ring", seed=0, timeout=None, optimizer=None):
    """(state, hook) for `model.register_comm_hook(state, hook)`.

    model: the DistributedDataParallel model (or its module). codec: any
    spec `qccl train --codec` accepts. algorithm: "ring" or
    "halving-doubling" ("native" for fp32/fp16, MPI's own allreduce).
    seed: keys the codec's random rounding (the same on every rank).
    timeout: seconds a bucket may take (default: qccl.init's). optimizer:
    the optimizer, for codecs that adapt to its learning rate (intsgd).
    Every rank must create its hooks in the same order."""
    return DDPHookState(model, codec, algorithm, seed, timeout, optimizer), _hook
