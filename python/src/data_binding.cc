// qccl.data: the datasets of `qccl train`, so that a PyTorch script trains
// on exactly the samples qccl's engine does — ClickData, the generated
// click-through data of the recommender (src/qccl/data/click_data.h), and
// fashion_mnist(), the images of the MLP and the CNN read by qccl's reader.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <span>
#include <string>

#include "module_parts.h"
#include "qccl/common/errors.h"
#include "qccl/data/click_data.h"
#include "qccl/data/image_set.h"

namespace qccl::python {
namespace {

namespace py = pybind11;
using Indices = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// pybind11 before 2.12 reads NumPy's array descriptors where NumPy 1 keeps
// them; NumPy 2 moved them, and arrays made or read there come out wrong
// without an error (a Fashion-MNIST label array came back as one label
// repeated). Built so (Debian 12's pybind11 is 2.10), every call that
// touches an array refuses NumPy 2, naming both fixes; built with 2.12 or
// later (pip install . fetches it), NumPy 1 and 2 both work.
void check_numpy_abi() {
#if PYBIND11_VERSION_MAJOR == 2 && PYBIND11_VERSION_MINOR < 12
  const auto version = py::module_::import("numpy").attr("__version__").cast<std::string>();
  if (std::stoi(version) >= 2) {
    throw InvalidArgument(
        "qccl.data was built with pybind11 " + std::to_string(PYBIND11_VERSION_MAJOR) + "." +
        std::to_string(PYBIND11_VERSION_MINOR) + ", which predates NumPy 2, and NumPy " +
        version + " is loaded: its arrays would come out wrong. Use numpy<2 in this "
        "environment, or build qccl with pybind11 2.12 or later (pip install . fetches one)");
  }
#endif
}

std::size_t checked_index(const data::ClickData& data, std::int64_t i, bool test) {
  const auto& shape = data.shape();
  const std::size_t samples = test ? shape.test_samples : shape.train_samples;
  if (i < 0 || static_cast<std::size_t>(i) >= samples) {
    throw InvalidArgument("sample " + std::to_string(i) + " is outside the " +
                          (test ? "test" : "training") + " set of " + std::to_string(samples));
  }
  return static_cast<std::size_t>(i);
}

py::array_t<std::int64_t> features(const data::ClickData& data, const Indices& indices,
                                   bool test) {
  check_numpy_abi();
  if (indices.ndim() != 1) throw InvalidArgument("features(): indices must be one-dimensional");
  const auto n = static_cast<std::size_t>(indices.shape(0));
  const std::size_t fields = data.shape().fields;
  py::array_t<std::int64_t> out({n, fields});
  const std::int64_t* in = indices.data();
  std::int64_t* values = out.mutable_data();
  for (std::size_t k = 0; k < n; ++k) {
    data.features(checked_index(data, in[k], test), test, std::span(values + k * fields, fields));
  }
  return out;
}

py::array_t<float> labels(const data::ClickData& data, const Indices& indices, bool test) {
  check_numpy_abi();
  if (indices.ndim() != 1) throw InvalidArgument("labels(): indices must be one-dimensional");
  const auto n = static_cast<std::size_t>(indices.shape(0));
  py::array_t<float> out(n);
  const std::int64_t* in = indices.data();
  float* values = out.mutable_data();
  for (std::size_t k = 0; k < n; ++k) values[k] = data.label(checked_index(data, in[k], test), test);
  return out;
}

// (images uint8 (n, rows, cols), labels int64 (n)) of one split.
py::tuple fashion_mnist(const std::string& split, const std::string& directory) {
  check_numpy_abi();
  if (split != "train" && split != "test") {
    throw InvalidArgument("fashion_mnist: split is 'train' or 'test', not '" + split + "'");
  }
  const data::ImageSet set =
      data::read_fashion_mnist(directory, split == "train" ? data::Split::train : data::Split::test);
  py::array_t<std::uint8_t> images({set.size(), set.rows, set.cols});
  std::copy(set.pixels.begin(), set.pixels.end(), images.mutable_data());
  py::array_t<std::int64_t> labels(set.size());
  std::copy(set.labels.begin(), set.labels.end(), labels.mutable_data());
  return py::make_tuple(images, labels);
}

}  // namespace

void bind_data(py::module_& module) {
  py::class_<data::ClickData>(module, "ClickData",
                              "Generated click-through samples, a pure function of (seed, index).")
      .def(py::init([](std::size_t fields, std::size_t values_per_field, std::size_t train_samples,
                       std::size_t test_samples, std::uint64_t seed) {
             if (fields == 0 || values_per_field == 0 || train_samples == 0 || test_samples == 0) {
               throw InvalidArgument("ClickData: fields, values_per_field, train_samples and "
                                     "test_samples must all be positive");
             }
             return data::ClickData({fields, values_per_field, train_samples, test_samples}, seed);
           }),
           py::arg("fields") = 8, py::arg("values_per_field") = 100000,
           py::arg("train_samples") = 200000, py::arg("test_samples") = 20000,
           py::arg("seed") = 0)
      .def_property_readonly("fields", [](const data::ClickData& d) { return d.shape().fields; })
      .def_property_readonly("values_per_field",
                             [](const data::ClickData& d) { return d.shape().values_per_field; })
      .def_property_readonly("train_samples",
                             [](const data::ClickData& d) { return d.shape().train_samples; })
      .def_property_readonly("test_samples",
                             [](const data::ClickData& d) { return d.shape().test_samples; })
      .def("features", &features, py::arg("indices"), py::arg("test") = false,
           "int64 array (len(indices), fields) of the samples' categorical values")
      .def("labels", &labels, py::arg("indices"), py::arg("test") = false,
           "float32 array of the samples' 0/1 click labels");
  module.def("fashion_mnist", &fashion_mnist, py::arg("split") = "train",
             py::arg("directory") = std::string(data::kFashionMnistDirectory),
             "(images uint8 (n, 28, 28), labels int64 (n)) of Fashion-MNIST's split");
}

}  // namespace qccl::python
