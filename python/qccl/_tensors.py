"""Checks that torch tensors can be handed to qccl's core as fp32 memory."""

from .errors import InvalidArgument


def _torch():
    import torch  # imported lazily: qccl.data and the errors work without it
    return torch


def fp32_buffer(tensor, what, writable=False, devices=("cpu",)):
    """(address, element count) of a float32 tensor on one of `devices`
    (device types); a tensor qccl writes into must be contiguous already,
    one it only reads is made so."""
    torch = _torch()
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"{what} must be a torch.Tensor, not {type(tensor).__name__}")
    if tensor.device.type not in devices:
        raise InvalidArgument(f"{what} is on {tensor.device}; this qccl call takes tensors on "
                              f"{' or '.join(devices)} (move it with .cpu(); the collectives "
                              "and the DDP hook also take CUDA tensors)")
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
    """The DDP hook's parameters: on the CPU or all on one CUDA device, and
    of a dtype it averages; refused with the fix otherwise (before
    training, not at the first backward). Returns their torch.device."""
    torch = _torch()
    devices = set()
    for name, parameter in named:
        if parameter.device.type not in ("cpu", "cuda"):
            raise InvalidArgument(f"parameter '{name}' is on {parameter.device}; qccl's DDP hook "
                                  "averages CPU and CUDA gradients")
        devices.add(parameter.device)
        if parameter.dtype not in tuple(getattr(torch, t) for t in HOOK_DTYPES):
            raise InvalidArgument(
                f"parameter '{name}' has dtype {parameter.dtype}; qccl's DDP hook averages "
                f"{', '.join(HOOK_DTYPES)} gradients: convert the model before wrapping it in "
                "DDP, e.g. model.float() (or model.to(torch.bfloat16))")
    if len(devices) > 1:
        raise InvalidArgument(f"the model's parameters are on {sorted(map(str, devices))}; "
                              "qccl's DDP hook averages a model on one device per process "
                              "(move it with model.to(device) before wrapping it in DDP)")
    return devices.pop()


def bucket_half_type(buffer):
    """None for a float32 gradient bucket, "bfloat16" or "float16" for a
    half-precision one (the hook averages those in fp32 — on the CPU chunk
    by chunk — and writes the mean back in the bucket's dtype); other
    dtypes are refused."""
    name = str(buffer.dtype).replace("torch.", "")
    if name not in HOOK_DTYPES:
        raise InvalidArgument(f"a gradient bucket has dtype {buffer.dtype}; qccl's DDP hook "
                              f"averages {', '.join(HOOK_DTYPES)}")
    if not buffer.is_contiguous():
        raise InvalidArgument("a gradient bucket is not contiguous; qccl's DDP hook writes the "
                              "mean into it in place")
    return None if name == "float32" else name
