// qccl's exceptions as Python exceptions: qccl.Error and its subclasses
// (InvalidArgument is also a ValueError, TimeoutError also Python's
// TimeoutError, IoError also an OSError), with the C++ message unchanged, so
// a Python script sees the same text `qccl train` prints.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace qccl::python {

// bind_errors (module_parts.h) creates the classes in the module and
// registers the translator for exceptions that leave a bound function.

// The Python exception object for `failure` (a qccl exception, or any
// other as RuntimeError). Call with the GIL held.
pybind11::object python_exception(std::exception_ptr failure);

}  // namespace qccl::python
