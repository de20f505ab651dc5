// The _qccl extension module; the package around it is python/qccl.
#include <pybind11/pybind11.h>

#include "module_parts.h"

PYBIND11_MODULE(_qccl, module) {
  module.doc() = "qccl's native core: compressed collectives over MPI, and the DDP hook's side";
  qccl::python::bind_errors(module);
  qccl::python::bind_context(module);
  qccl::python::bind_bucket_hook(module);
#ifndef QCCL_PYTHON_WITHOUT_DATASETS
  auto data = module.def_submodule("data", "Datasets of qccl's training engine");
  qccl::python::bind_data(data);
  auto plots = module.def_submodule("plots", "The SVG plots of qccl's tools, for reports");
  qccl::python::bind_plots(plots);
#endif
}
