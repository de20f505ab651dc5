// The parts of the _qccl extension module, each binding one area.
#pragma once

#include <pybind11/pybind11.h>

namespace qccl::python {

void bind_errors(pybind11::module_& module);
void bind_context(pybind11::module_& module);
void bind_bucket_hook(pybind11::module_& module);
void bind_data(pybind11::module_& module);
void bind_plots(pybind11::module_& module);

}  // namespace qccl::python
