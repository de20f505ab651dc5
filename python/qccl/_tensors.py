"""Checks that torch tensors can be handed to qccl's core as fp32 memory."""

from .errors import InvalidArgument


def _torch():
    import torch  # imported lazily: qccl.data and the errors work without it
    return torch


def fp32_buffer(tensor, what, writable=False):
    """(address, element count) of a CPU float32 tensor; a tensor qccl writes
    into must be contiguous already, one it only reads is made so."""
    torch = _torch()
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"{what} must be a torch.Tensor, not {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise InvalidArgument(f"{what} is on {tensor.device}; qccl reduces CPU tensors "
                              "(move it with .cpu(), or reduce on the CPU)")
    if tensor.dtype != torch.float32:
        raise InvalidArgument(f"{what} has dtype {tensor.dtype}; qccl's codecs take float32 "
                              "(convert with .float())")
    if writable and not tensor.is_contiguous():
        raise InvalidArgument(f"{what} is not contiguous; qccl writes the result in place, so "
                              "pass a contiguous tensor (.contiguous() makes a copy)")
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    return tensor, tensor.data_ptr(), tensor.numel()


HOOK_DTYPES = ("float32", "bfloat16", "float16")


def check_parameters(named):
    """The DDP hook's parameters: CPU, and of a dtype it averages; refused
    with the fix otherwise (before training, not at the first backward)."""
    torch = _torch()
    for name, parameter in named:
        if parameter.device.type != "cpu":
            raise InvalidArgument(f"parameter '{name}' is on {parameter.device}; qccl's DDP hook "
                                  "averages CPU gradients (train on the CPU, or use DDP's own "
                                  "hooks on GPUs)")
        if parameter.dtype not in tuple(getattr(torch, t) for t in HOOK_DTYPES):
            raise InvalidArgument(
                f"parameter '{name}' has dtype {parameter.dtype}; qccl's DDP hook averages "
                f"{', '.join(HOOK_DTYPES)} gradients: convert the model before wrapping it in "
                "DDP, e.g. model.float() (or model.to(torch.bfloat16))")


def bucket_buffer(buffer, staging, index):
    """The fp32 memory the hook averages a bucket in: the bucket itself when
    it is float32, else (bfloat16, float16) an fp32 copy, in a tensor kept
    per bucket index and reused every step, that the caller writes back."""
    torch = _torch()
    if buffer.dtype == torch.float32:
        return fp32_buffer(buffer, "the gradient bucket", writable=True)[0]
    if str(buffer.dtype).replace("torch.", "") not in HOOK_DTYPES:
        raise InvalidArgument(f"a gradient bucket has dtype {buffer.dtype}; qccl's DDP hook "
                              f"averages {', '.join(HOOK_DTYPES)}")
    fp32 = staging.get(index)
    if fp32 is None or fp32.numel() != buffer.numel():
        fp32 = staging[index] = torch.empty(buffer.numel(), dtype=torch.float32)
    fp32.copy_(buffer.view(-1))
    return fp32


def half_chunks(parameters, chunk_elements):
    """A bucket cut into chunks of whole parameters, each about
    `chunk_elements` elements (one larger parameter: a chunk alone), in
    bucket order: (first element, element count, the parameters' positions
    in `parameters`)."""
    chunks, first, count, members = [], 0, 0, []
    for i, parameter in enumerate(parameters):
        n = parameter.numel()
        if members and count + n > chunk_elements:
            chunks.append((first, count, members))
            first, count, members = first + count, 0, []
        count += n
        members.append(i)
    if members:
        chunks.append((first, count, members))
    return chunks
