#include "errors.h"
#include "module_parts.h"

#include <Python.h>

#include <initializer_list>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

namespace py = pybind11;

constexpr const char* kModule = "qccl._qccl";

py::object make_class(py::module_& module, const char* name,
                      std::initializer_list<py::handle> bases, const char* doc) {
  py::tuple base_tuple(bases.size());
  std::size_t i = 0;
  for (py::handle base : bases) base_tuple[i++] = py::reinterpret_borrow<py::object>(base);
  const std::string qualified = std::string("qccl.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  auto object = py::reinterpret_steal<py::object>(type);
  module.add_object(name, object);
  return object;
}

// The name of the class for a qccl exception, most derived first; null for
// one that is not qccl's.
const char* class_name(const std::exception& e) {
  if (dynamic_cast<const NonFiniteError*>(&e)) return "NonFiniteError";
  if (dynamic_cast<const InvalidArgument*>(&e)) return "InvalidArgument";
  if (dynamic_cast<const MismatchError*>(&e)) return "MismatchError";
  if (dynamic_cast<const TimeoutError*>(&e)) return "TimeoutError";
  if (dynamic_cast<const CommError*>(&e)) return "CommError";
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return nullptr;
}

// The class itself, from the module's attributes (the classes live there,
// not in globals of this library).
py::object class_for(const std::exception& e) {
  const char* name = class_name(e);
  if (name == nullptr) return py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  return py::module_::import(kModule).attr(name);
}

}  // namespace

void bind_errors(py::module_& module) {
  const auto error = make_class(module, "Error", {PyExc_RuntimeError}, "Base of every qccl error.");
  const auto invalid = make_class(module, "InvalidArgument", {error, PyExc_ValueError},
                                  "A bad argument or setting on this rank.");
  make_class(module, "NonFiniteError", {invalid},
             "NaN or Inf in the data of some rank; raised on every rank before any data moved.");
  make_class(module, "MismatchError", {error},
             "Ranks called the same operation with different arguments.");
  make_class(module, "TimeoutError", {error, PyExc_TimeoutError},
             "A wait did not complete within its timeout.");
  make_class(module, "CommError", {error},
             "The transport failed, or an earlier failure poisoned the communicator.");
  make_class(module, "IoError", {error, PyExc_OSError},
             "A file could not be written or read back.");
  py::register_exception_translator([](std::exception_ptr failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      PyErr_SetString(class_for(e).ptr(), e.what());
    }
  });
}

py::object python_exception(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return class_for(e)(e.what());
  } catch (...) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)("an unknown failure");
  }
}

}  // namespace qccl::python
