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
