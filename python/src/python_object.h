// A Python object that C++ threads may hold and release: copies share it,
// and the last copy drops its reference with the GIL taken, whichever
// thread that happens on (a stream's thread finishing an operation, or the
// interpreter's). Calling it takes the GIL too.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

namespace qccl::python {

class PythonObject {
 public:
  PythonObject() = default;
  // Call with the GIL held.
  explicit PythonObject(pybind11::object object)
      : object_(new pybind11::object(std::move(object)), [](pybind11::object* held) {
          if (!Py_IsInitialized()) {  // the interpreter is gone, and the reference with it
            held->release();
            delete held;
            return;
          }
          pybind11::gil_scoped_acquire gil;
          delete held;
        }) {}

  // Takes the GIL and calls the object with the one argument make() builds
  // (under the GIL too). A Python error it raises is reported as
  // unraisable and dropped: a callback on a C++ thread has no caller to
  // raise it to.
  template <class MakeArgument>
  void call_and_report(MakeArgument&& make) const {
    if (!object_ || !Py_IsInitialized()) return;
    pybind11::gil_scoped_acquire gil;
    try {
      (*object_)(make());
    } catch (pybind11::error_already_set& e) {
      e.discard_as_unraisable("qccl: in a completion callback");
    }
  }

 private:
  std::shared_ptr<pybind11::object> object_;
};

}  // namespace qccl::python
