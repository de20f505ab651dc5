"""qccl's DDP communication hook.

    state, hook = qccl.ddp_hook(ddp_model, codec="global-qsgd:bits=8")
    ddp_model.register_comm_hook(state, hook)

DDP calls the hook with each gradient bucket, in bucket order on every rank.
Two modes, chosen by how the ranks were started (qccl.init()):

- the MPI mode (mpirun): the hook hands the bucket to qccl's communication
  thread and returns a torch.futures.Future at once; qccl averages the
  bucket over MPI with the codec — its own ring or halving-doubling, which
  combine encodings hop by hop — and completes the future while backward
  goes on (DDP's overlap is kept);
- the process-group mode (torchrun, or `process_group=`): qccl encodes and
  decodes, and the exchange goes through the torch.distributed process
  group — an integer SUM allreduce for codecs whose encodings add up
  (Global-QSGD with linear dithering, the IntSGD family), an allgather of
  the encoded bytes for the others, the group's fp32 allreduces for fp32,
  fp16 and PowerSGD — on the thread that calls the hook.

Either way the mean is bitwise identical on every rank. A failure (NaN/Inf
on some rank, ranks with different codecs, a timeout) reaches backward() as
the qccl exception, on every rank.

The codec's state is kept per parameter (by name), so it survives DDP's
bucket rebuild; state.state_dict() and load_state_dict() save and restore it
with the model's checkpoint.
"""

from ._native import native
from ._tensors import bucket_half_type, check_parameters
from .collectives import DEFAULT_TIMEOUT, check_matches_torch_distributed, context, on_group
from ._group_ops import GroupOps, host_memory_group
from .errors import Error, InvalidArgument

FP32_BYTES = 4
# A half-precision bucket's chunks: about this many elements each (whole
# parameters; a larger parameter is a chunk of its own).
HALF_CHUNK = 1 << 20


def _native_hook(model, codec, algorithm, seed, timeout, process_group, names, shapes):
    """The native side: on a process group (given, or under torchrun the DDP
    model's), with the GroupOps it runs on, or on qccl's MPI context (and
    None)."""
    ctx = context()
    if process_group is None and not on_group():
        check_matches_torch_distributed(ctx)
        return native.BucketHook(ctx, codec, seed, algorithm,
                                 None if timeout is None else float(timeout), names, shapes), None
    if algorithm != "ring":
        raise InvalidArgument(f"algorithm={algorithm!r} chooses qccl's own collectives in the "
                              "MPI mode; the process-group mode uses the group's")
    group = process_group if process_group is not None else getattr(model, "process_group", None)
    group = host_memory_group(group)  # NCCL: a gloo group beside it
    wait = float(timeout) if timeout is not None else getattr(ctx, "timeout", DEFAULT_TIMEOUT)
    ops = GroupOps(group, timeout=wait)
    return native.BucketHook.create_on_group(ops, codec, seed, wait, names, shapes), ops


class DDPHookState:
    """The hook's state: which parameter is which, the codec of each bucket,
    and the optimizer whose learning rate codecs like IntSGD adapt to."""

    def __init__(self, model, codec, algorithm, seed, timeout, optimizer, process_group):
        module = getattr(model, "module", model)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise InvalidArgument("the model has no parameters that require gradients")
        device = check_parameters(named)
        self._number = {id(p): i for i, (_, p) in enumerate(named)}
        self._failures = []  # the buckets' failures in this backward pass
        self._pending = []  # this backward pass's futures
        self.half_chunk = HALF_CHUNK
        self._native, self._group_ops = _native_hook(
            model, codec, algorithm, seed, timeout, process_group, [n for n, _ in named],
            [list(p.shape) for _, p in named])
        if self._native.on_group and hasattr(context(), "add_hook"):
            context().add_hook(self)  # closed by qccl.shutdown()
        # Where the buckets of a CPU model go: "host" (the host step), or
        # "host-reference", the device step's host reference, which runs
        # the GPU path on CPU tensors (tests; _set_host_buckets).
        self._host_buckets = "host"
        self._cuda_stream = None  # the device steps' stream (_stream_on)
        # Device buckets' optimizer feedback: each parameter's value at the
        # last call, where it lives (_device_update_norms).
        self._previous_values = {}
        if device.type == "cuda":
            self._native.check_bucket_memory("cuda")  # the codec has a device step, the build CUDA
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
    def process_group_mode(self):
        """True when the hook exchanges through a torch.distributed group."""
        return self._native.on_group

    @property
    def bytes_sent(self):
        """Data bytes this rank's hook has sent so far (handed to the process
        group in its mode; with algorithm="native", what a ring allreduce of
        the encoded buckets sends, as MPI does not report its own)."""
        return self._native.bytes_sent

    @property
    def compression_ratio(self):
        """fp32 bytes of the gradients averaged so far over the bytes of
        their encodings (the codec's wire size): 1 for fp32, about 4 for
        8-bit codecs; None before the first bucket."""
        elements = self._native.elements_reduced
        encoded = self._native.encoded_bytes
        return None if elements == 0 or encoded == 0 else FP32_BYTES * elements / encoded

    def state_dict(self):
        """The codec state of every bucket and parameter (waits for buckets
        in flight)."""
        return {"codec": self.codec, "native": self._native.save_state()}

    def close(self):
        """Ends the hook: buckets handed to it afterwards, and state_dict(),
        raise InvalidArgument saying it was closed; the buckets already
        queued complete first (each within the hook's timeout). Safe from
        any thread, also while another one hands it buckets; idempotent.
        qccl.shutdown() and deleting the state close it too. In the
        process-group mode it then waits (up to the hook's timeout) until
        the group's threads have let go of qccl's tensors (_group_ops.py),
        so that the group can end after it."""
        self._native.close()
        if self._group_ops is not None:
            self._group_ops.release()

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

    def _stream_on(self, device):
        """The hook's CUDA stream on `device` (made once), or None for the
        host reference."""
        if device.type != "cuda":
            return None
        if self._cuda_stream is None:
            import torch
            self._cuda_stream = torch.cuda.Stream(device)
        return self._cuda_stream

    def _set_host_buckets(self, memory):
        """"host" or "host-reference": CPU buckets then take the device
        step's path (fp32 widening, the codec's device step on its host
        reference, the result written back), so it runs without a GPU."""
        self._native.check_bucket_memory(memory)
        self._host_buckets = memory

    def _reduce(self, bucket):
        import torch
        buffer = bucket.buffer()
        parameters = bucket.parameters()
        try:
            numbers = [self._number[id(p)] for p in parameters]
        except KeyError:
            raise InvalidArgument("a bucket holds a parameter the hook was not created for: "
                                  "pass the DDP model whose hook this is to qccl.ddp_hook") from None
        half = bucket_half_type(buffer)
        memory = "cuda" if buffer.device.type == "cuda" else self._host_buckets
        # A CUDA bucket's future carries the device, so that DDP's wait on it
        # orders its next work after the mean's (torch.futures.Future).
        future = torch.futures.Future(devices=[buffer.device]) if memory == "cuda" \
            else torch.futures.Future()
        in_backward = self._raise_after_backward(future)
        failures = self._failures  # not self: the stream's thread must not end the hook

        def failed(error):
            if not in_backward:  # called by hand: the future has it
                future.set_exception(error)
                return
            failures.append(error)  # DDP gets the bucket as it is; backward() raises `error`
            future.set_result(buffer)

        if memory == "host":
            # fp32 copies of half-precision parameters live until submit has read them.
            current = self._feedback_values(parameters)
            arguments = (bucket.index(), buffer.data_ptr(), buffer.numel(), numbers,
                         [p.data_ptr() for p in current], self._step_size(), half,
                         self.half_chunk)
            options = {}

            def finish():
                future.set_result(buffer)  # the mean, written in the bucket's dtype
        else:
            feedback = self._native.wants_step_feedback
            arguments, options, finish = _device_bucket(bucket.index(), buffer, numbers, memory,
                                                        future, self._stream_on(buffer.device),
                                                        self._step_size() if feedback else None)
            if feedback:
                options["update_norms"] = self._device_update_norms(parameters, numbers)
        if self._native.on_group:  # averaged before submit returns
            try:
                self._native.submit(*arguments, None, **options)
            except Error as error:
                failed(error)
            else:
                finish()
            return future

        def done(error):
            if error is not None:
                failed(error)
            else:
                finish()

        self._native.submit(*arguments, done, **options)
        return future

    def _device_update_norms(self, parameters, numbers):
        """For a device bucket of a codec that adapts to the optimizer's
        steps (IntSGD): each parameter's Σ (x − x_prev)² since the last
        call, x − x_prev in float32 as on the host path, squared and summed
        in float64 where the parameters live (one copy of the sums to the
        host per bucket; the summation order is PyTorch's, so a GPU rank's
        scales can differ from a CPU rank's in the last bits, which the
        step's check reports). Empty until every parameter of the bucket
        has a previous value."""
        import torch
        with torch.no_grad():
            norms, complete = [], True
            for number, p in zip(numbers, parameters):
                now = p.detach().float()
                previous = self._previous_values.get(number)
                if previous is not None and previous.shape == now.shape:
                    norms.append(torch.sum((now - previous).double() ** 2))
                    previous.copy_(now)
                else:
                    complete = False
                    self._previous_values[number] = now.clone()
            return torch.stack(norms).tolist() if complete and norms else []

    def _feedback_values(self, parameters):
        """The parameters' current values as fp32 tensors, for codecs that
        adapt to the optimizer's steps (none for the others)."""
        if not self._native.wants_step_feedback:
            return []
        return [p.detach().float() for p in parameters]

    # A failure reaches backward() as qccl's exception, not as the
    # "Unable to cast ... to Tensor" that a future's exception becomes in
    # DDP: the hook completes the bucket's future with the bucket as it was,
    # and a callback that autograd runs at the end of this backward pass
    # waits for the pass's buckets and raises the first failure. autograd
    # passes an exception raised in a Python callback on unchanged.
    # False when the hook was called outside a backward pass.
    def _raise_after_backward(self, future):
        if self._pending:
            self._pending.append(future)
            return True
        import torch
        try:
            torch.autograd.Variable._execution_engine.queue_callback(self._raise_failure)
        except RuntimeError:  # "can only be installed during backward pass"
            return False
        self._pending.append(future)
        return True

    def _raise_failure(self):
        pending, self._pending = self._pending, []
        for future in pending:
            future.wait()  # every bucket completes, within the hook's timeout
        if self._failures:
            failure = self._failures[0]
            self._failures.clear()
            raise failure


def _device_bucket(index, buffer, numbers, memory, future, stream, step_size):
    """The native submit's arguments for a bucket averaged by the codec's
    device step, and what completes it. `stream` (CUDA; None on the host
    reference) is the hook's own stream on the bucket's device: it waits
    for the work queued so far on the current stream (backward's, which
    wrote the bucket), and the step's kernels and copies run on it, so they
    neither wait for backward's later kernels nor hold them up. A
    half-precision bucket is widened to fp32 there first (one fp32 copy of
    the bucket, on its device) and its mean narrowed back, rounded to
    nearest even as PyTorch casts. `finish` (on the thread that completes
    the bucket) writes the mean back on that stream and completes the
    future, which records that stream's progress for DDP to wait on.
    `step_size`: the learning rate, for codecs that adapt to it (else
    None)."""
    import contextlib
    import torch
    on_stream = contextlib.nullcontext
    if stream is not None:
        stream.wait_stream(torch.cuda.current_stream(buffer.device))
        on_stream = lambda: torch.cuda.stream(stream)  # noqa: E731
    with on_stream():
        values = buffer if buffer.dtype == torch.float32 else buffer.float()
    arguments = (index, values.data_ptr(), values.numel(), numbers, [], step_size, None, 0)
    options = {"memory": memory, "stream": stream.cuda_stream if stream is not None else 0,
               "device": buffer.device.index or 0}

    def finish():
        with on_stream():
            if values is not buffer:
                buffer.copy_(values)
            future.set_result(buffer)
    return arguments, options, finish


def _hook(state, bucket):
    return state._reduce(bucket)  # pylint: disable=protected-access


def ddp_hook(model, codec="fp32", *, algorithm="ring", seed=0, timeout=None, optimizer=None,
             process_group=None):
    """(state, hook) for `model.register_comm_hook(state, hook)`: DDP then
    averages its gradient buckets with a qccl codec instead of its fp32
    allreduce.

    Under torchrun (the process-group mode):

        import torch, torch.distributed as dist, qccl
        qccl.init()                         # torch.distributed from torchrun's env (gloo)
        model = torch.nn.parallel.DistributedDataParallel(net)
        state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8")
        model.register_comm_hook(state, hook)

    On GPUs with NCCL (dist.init_process_group("nccl")), the hook's
    exchange goes over a gloo group it creates beside the model's (qccl's
    codes are in host memory); DDP's own broadcasts stay on NCCL.

    Under mpirun (the MPI mode), the same after
    dist.init_process_group("gloo", init_method=..., rank=qccl.rank(),
    world_size=qccl.size()): qccl's own ring exchanges the buckets.

    Supported: gradients in float32, bfloat16 and float16, on the CPU or on
    one CUDA device per process. On the CPU a half-precision bucket is
    averaged chunk by chunk — whole parameters, about state.half_chunk
    elements — in one float32 buffer of a chunk's size and written back in
    its dtype (AMP with float32 gradients is float32). On a GPU (a qccl
    built with CUDA) the codec's device step averages the bucket where it
    is, on a stream of its own ordered after the current CUDA stream's
    work, with only the encoded bytes crossing to the host; a
    half-precision bucket is widened to one float32 copy on the device.
    Codecs with a device step: global-qsgd, fp16, fp32, intsgd,
    intsgd-heuristic and minmax with uniform levels (others
    are refused for a GPU model, naming them;
    docs/gpu.md). float64 parameters, and
    parameters on several devices, are refused, naming the fix.

    model: the DistributedDataParallel model (or its module). codec: any
    spec `qccl train --codec` accepts; qccl.codecs() lists them with what
    they do. In the process-group mode, codecs that combine encodings hop
    by hop in qccl's ring (exponential dithering, 4-bit averaging levels)
    are refused, naming the MPI mode that runs them. algorithm (MPI mode):
    "ring" or "halving-doubling" ("native" for fp32/fp16, MPI's own
    allreduce). seed: keys the codec's random rounding (the same on every
    rank). timeout: seconds a bucket may take (default: qccl.init's).
    optimizer: the optimizer, for codecs that adapt to its learning rate
    (intsgd). process_group: exchange through this torch.distributed group
    (default under torchrun: the DDP model's group); passing one selects the
    process-group mode under mpirun too. Every rank must create its hooks
    in the same order.

    state.bytes_sent and state.compression_ratio report what was sent."""
    return DDPHookState(model, codec, algorithm, seed, timeout, optimizer, process_group), _hook
