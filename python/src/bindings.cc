// The bindings of the context, the compressors and the DDP hook's native
// side (context.h, compressor.h, bucket_hook.h). Every call that moves data
// or waits — for data, or for another thread's call — releases the GIL, so
// the hooks' streams can complete futures and other threads run meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>

#include "bucket_hook.h"
#include "device_bucket.h"
#include "compressor.h"
#include "context.h"
#include "group_runner.h"
#include "module_parts.h"
#include "parameter_chunks.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

namespace py = pybind11;
using release_gil = py::call_guard<py::gil_scoped_release>;

std::span<const std::byte> bytes_view(const py::bytes& bytes) {
  const std::string_view view = bytes;
  return std::as_bytes(std::span(view.data(), view.size()));
}

py::bytes to_bytes(const std::vector<std::byte>& bytes) {
  return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<ParameterInfo> parameter_infos(const std::vector<std::string>& names,
                                           const std::vector<std::vector<std::int64_t>>& shapes) {
  if (names.size() != shapes.size()) {
    throw InvalidArgument("BucketHook: one shape per parameter name");
  }
  std::vector<ParameterInfo> parameters;
  for (std::size_t i = 0; i < names.size(); ++i) parameters.push_back({names[i], shapes[i]});
  return parameters;
}

}  // namespace

void bind_context(py::module_& module) {
  py::class_<Context, std::shared_ptr<Context>>(module, "Context")
      .def(py::init<double>(), py::arg("timeout"), release_gil())
      .def_property_readonly("rank", &Context::rank)
      .def_property_readonly("size", &Context::size)
      .def_property_readonly("thread_level", &Context::thread_level)
      .def_property_readonly("timeout", &Context::timeout_seconds)
      .def_property_readonly("closed", &Context::closed)
      .def("close", &Context::close, release_gil());

  // The process-group mode's runner that its compressors share (the
  // GroupOps of qccl/_group_ops.py on the default group).
  py::class_<GroupRunner, std::shared_ptr<GroupRunner>>(module, "GroupWorld")
      .def(py::init([](py::object ops, double timeout) {
             return std::make_shared<GroupRunner>(
                 std::move(ops), timeout_from_seconds(timeout, "timeout"),
                 "qccl's process group", "make qccl's calls before qccl.shutdown()");
           }),
           py::arg("ops"), py::arg("timeout"))
      .def_property_readonly("rank", &GroupRunner::rank)
      .def_property_readonly("size", &GroupRunner::size)
      .def("close", [](GroupRunner& world) { world.close("was shut down (qccl.shutdown())"); },
           release_gil());

  py::class_<Compressor>(module, "Compressor")
      .def(py::init<std::shared_ptr<Context>, const std::string&, std::uint64_t,
                    const std::string&, std::optional<double>>(),
           py::arg("context"), py::arg("codec"), py::arg("seed"), py::arg("algorithm"),
           py::arg("timeout"))
      .def(py::init<std::shared_ptr<GroupRunner>, const std::string&, std::uint64_t,
                    const std::string&, std::optional<double>>(),
           py::arg("group"), py::arg("codec"), py::arg("seed"), py::arg("algorithm"),
           py::arg("timeout"))
      .def_property_readonly("codec", &Compressor::spec)
      .def_property_readonly("step",
                             [](Compressor& c) {
                               py::gil_scoped_release no_gil;
                               return c.step();
                             })
      .def("blocks", &Compressor::blocks, py::arg("count"), release_gil())
      .def("error_bound", &Compressor::error_bound, py::arg("inf_norm"), release_gil())
      .def("allreduce_mean", &Compressor::allreduce_mean, release_gil())
      .def("allreduce_mean_on_device",
           [](Compressor& c, std::uintptr_t data, std::size_t count, const std::string& memory,
              std::uintptr_t stream, int device) {
             c.allreduce_mean_on_device(
                 DeviceBucket{parse_bucket_memory(memory), data, count, stream, device});
           },
           py::arg("data"), py::arg("count"), py::arg("memory"), py::arg("stream"),
           py::arg("device"), release_gil())
      .def("reduce_scatter_mean", &Compressor::reduce_scatter_mean, release_gil())
      .def("allgather", &Compressor::allgather, release_gil())
      .def("step_on_device",
           [](Compressor& c, const std::string& operation, std::uintptr_t input, std::size_t count,
              std::uintptr_t output, std::size_t output_count, const std::string& memory,
              std::uintptr_t stream, int device) {
             const BucketMemory where = parse_bucket_memory(memory);
             c.step_on_device(operation == "allgather" ? CodecOperation::allgather
                                                       : CodecOperation::reduce_scatter_mean,
                              DeviceBucket{where, input, count, stream, device},
                              DeviceBucket{where, output, output_count, stream, device});
           },
           py::arg("operation"), py::arg("input"), py::arg("count"), py::arg("output"),
           py::arg("output_count"), py::arg("memory"), py::arg("stream"), py::arg("device"),
           release_gil())
      .def("save_state", [](Compressor& c) {
        std::vector<std::byte> state;
        {
          py::gil_scoped_release no_gil;
          state = c.save_state();
        }
        return to_bytes(state);
      })
      .def("load_state", [](Compressor& c, const py::bytes& state, std::uint64_t step) {
        const auto view = bytes_view(state);
        std::vector<std::byte> bytes(view.begin(), view.end());
        py::gil_scoped_release no_gil;
        c.load_state(bytes, step);
      });

  module.def("codec_catalog", &codec_catalog, "(name, description) of every codec");
  module.attr("cuda_buckets") = cuda_buckets_supported();
  module.def(
      "parameter_chunks",
      [](const std::vector<std::size_t>& elements, std::size_t chunk_elements) {
        std::vector<std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>> chunks;
        for (const auto& c : parameter_chunks(elements, chunk_elements)) {
          chunks.emplace_back(c.first, c.count, c.begin, c.end);
        }
        return chunks;
      },
      "(first element, elements, first parameter, end parameter) of each chunk a "
      "half-precision bucket is averaged in",
      py::arg("elements"), py::arg("chunk_elements"));
}

void bind_bucket_hook(py::module_& module) {
  py::class_<BucketHook, std::shared_ptr<BucketHook>>(module, "BucketHook")
      .def(py::init([](std::shared_ptr<Context> context, const std::string& spec,
                       std::uint64_t seed, const std::string& algorithm,
                       std::optional<double> timeout, std::vector<std::string> names,
                       std::vector<std::vector<std::int64_t>> shapes) {
             auto parameters = parameter_infos(names, shapes);
             py::gil_scoped_release no_gil;
             return BucketHook::create(std::move(context), spec, seed, algorithm, timeout,
                                       std::move(parameters));
           }),
           py::arg("context"), py::arg("codec"), py::arg("seed"), py::arg("algorithm"),
           py::arg("timeout"), py::arg("names"), py::arg("shapes"))
      .def_static("create_on_group",
                  [](py::object ops, const std::string& spec, std::uint64_t seed, double timeout,
                     std::vector<std::string> names,
                     std::vector<std::vector<std::int64_t>> shapes) {
                    return BucketHook::create_on_group(std::move(ops), spec, seed, timeout,
                                                       parameter_infos(names, shapes));
                  },
                  py::arg("ops"), py::arg("codec"), py::arg("seed"), py::arg("timeout"),
                  py::arg("names"), py::arg("shapes"))
      .def_property_readonly("codec", &BucketHook::spec)
      .def_property_readonly("wants_step_feedback", &BucketHook::wants_step_feedback)
      .def_property_readonly("on_group", &BucketHook::on_group)
      .def_property_readonly("elements_reduced", &BucketHook::elements_reduced)
      .def_property_readonly("encoded_bytes", &BucketHook::encoded_bytes)
      .def_property_readonly("bytes_sent", &BucketHook::bytes_sent)
      .def("submit",
           [](BucketHook& hook, std::size_t index, std::uintptr_t gradients, std::size_t count,
              std::vector<std::size_t> parameters, std::vector<std::uintptr_t> values,
              std::optional<double> step_size, std::optional<std::string> half,
              std::size_t half_chunk, py::object done, const std::string& memory,
              std::uintptr_t stream, int device, std::vector<double> update_norms) {
             BucketCall call{index,     gradients, count, std::move(parameters), std::move(values),
                             step_size, std::nullopt, half_chunk};
             if (half) call.half = parse_half_type(*half);
             call.memory = parse_bucket_memory(memory);
             call.stream = stream;
             call.device = device;
             call.update_norms = std::move(update_norms);
             PythonObject callback(std::move(done));
             py::gil_scoped_release no_gil;
             hook.submit(std::move(call), std::move(callback));
           },
           py::arg("index"), py::arg("gradients"), py::arg("count"), py::arg("parameters"),
           py::arg("values"), py::arg("step_size"), py::arg("half"), py::arg("half_chunk"),
           py::arg("done"), py::arg("memory") = "host", py::arg("stream") = 0,
           py::arg("device") = 0, py::arg("update_norms") = std::vector<double>{})
      .def("check_bucket_memory",
           [](const BucketHook& hook, const std::string& memory) {
             hook.check_bucket_memory(parse_bucket_memory(memory));
           },
           py::arg("memory"))
      .def("save_state", [](BucketHook& hook) {
        std::vector<std::byte> state;
        {
          py::gil_scoped_release no_gil;
          state = hook.save_state();
        }
        return to_bytes(state);
      })
      .def("load_state", [](BucketHook& hook, const py::bytes& state) {
        const auto view = bytes_view(state);
        std::vector<std::byte> bytes(view.begin(), view.end());
        py::gil_scoped_release no_gil;
        hook.load_state(std::move(bytes));
      })
      .def("close", [](BucketHook& hook) { hook.close("was closed (DDPHookState.close())"); },
           release_gil());
}

}  // namespace qccl::python
