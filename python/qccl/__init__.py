"""qccl for PyTorch: compressed collectives and a DDP communication hook.

    import qccl
    qccl.init()                                   # ranks from torchrun (or mpirun)
    state, hook = qccl.ddp_hook(ddp_model, codec="global-qsgd:bits=8")
    ddp_model.register_comm_hook(state, hook)

Every codec spec that `qccl train --codec` accepts works here, with the same
defaults and the same error messages (docs/pytorch.md).
"""

from ._version import __version__
from .errors import (CommError, Error, InvalidArgument, IoError, MismatchError, NonFiniteError,
                     TimeoutError)
from .collectives import (Compressor, allgather, allreduce_mean_, codecs, init, is_initialized,
                          rank, reduce_scatter_mean, shutdown, size)
from .ddp import DDPHookState, ddp_hook
from . import data

__all__ = [
    "__version__", "init", "shutdown", "is_initialized", "rank", "size", "codecs",
    "allreduce_mean_", "reduce_scatter_mean", "allgather", "Compressor",
    "ddp_hook", "DDPHookState", "data",
    "Error", "InvalidArgument", "NonFiniteError", "MismatchError", "TimeoutError", "CommError",
    "IoError",
]
