"""Loads the extension module. OpenMPI opens its components with dlopen and
they resolve MPI's symbols globally, so libmpi (a dependency of the
extension) must be loaded with RTLD_GLOBAL, as mpi4py does."""

import os
import sys

_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
try:
    from . import _qccl as native  # noqa: E402
finally:
    sys.setdlopenflags(_flags)
