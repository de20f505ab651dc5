"""qccl's exceptions. Every one is a qccl.Error (a RuntimeError); besides,
InvalidArgument is a ValueError, TimeoutError is Python's TimeoutError and
IoError an OSError. The messages are those of qccl's C++ core: they name the
cause and what to do about it."""

from ._native import native

Error = native.Error
InvalidArgument = native.InvalidArgument
NonFiniteError = native.NonFiniteError
MismatchError = native.MismatchError
TimeoutError = native.TimeoutError  # pylint: disable=redefined-builtin
CommError = native.CommError
IoError = native.IoError
