#include "group_transport.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

namespace py = pybind11;

double seconds(Timeout timeout) { return std::chrono::duration<double>(timeout).count(); }

// Writable even for data the group only reads: torch.frombuffer warns on
// every read-only buffer, and a send never writes.
py::memoryview view(std::span<const std::byte> bytes) {
  return py::memoryview::from_memory(const_cast<std::byte*>(bytes.data()),
                                     static_cast<py::ssize_t>(bytes.size()), false);
}

py::memoryview view(std::span<std::byte> bytes) {
  return py::memoryview::from_memory(static_cast<void*>(bytes.data()),
                                     static_cast<py::ssize_t>(bytes.size()), false);
}

// Calls ops.<method>(args...); the caller holds the GIL (every Python
// object, the memoryviews included, is made and dropped under it). A
// Python error becomes qccl's TimeoutError (a wait ran out) or CommError,
// so the codec's communicator is poisoned as after any transport failure.
template <class... Args>
py::object call(const py::object& ops, const char* method, Args&&... args) {
  try {
    return ops.attr(method)(std::forward<Args>(args)...);
  } catch (py::error_already_set& e) {
    const std::string message = std::string("the torch.distributed process group's ") + method +
                                " failed: " + e.what();
    if (e.matches(PyExc_TimeoutError)) throw TimeoutError(message);
    throw CommError(message);
  }
}

const char* type_name(DataType type) {
  switch (type) {
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::i64: return "i64";
    case DataType::f16: return "f16";
  }
  return "?";
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

// A point-to-point message in flight: the group's work object. gloo's
// send and receive works cannot be polled (they complete only in wait())
// and a wait that times out fails the message, so the first wait_for waits
// for the whole `limit` (the hook's timeout) instead of the slice the
// communicator asks for.
class GroupRequest final : public Request {
 public:
  GroupRequest(py::object ops, py::object work, std::size_t bytes, std::string what,
               Timeout limit)
      : ops_(std::move(ops)), work_(std::move(work)), bytes_(bytes), what_(std::move(what)),
        limit_(limit) {}
  ~GroupRequest() override {
    py::gil_scoped_acquire gil;
    work_ = py::object();
    ops_ = py::object();
  }

  bool test() override {
    py::gil_scoped_acquire gil;
    finished_ = finished_ || call(ops_, "done", work_).cast<bool>();
    return finished_;
  }
  bool wait_for(Timeout) override {
    py::gil_scoped_acquire gil;
    finished_ = finished_ || call(ops_, "wait", work_, seconds(limit_)).cast<bool>();
    return finished_;
  }
  std::size_t bytes() const override { return bytes_; }
  std::string describe() const override { return what_; }

 private:
  py::object ops_, work_;
  std::size_t bytes_;
  std::string what_;
  Timeout limit_;
  bool finished_ = false;
};

}  // namespace

GroupTransport::GroupTransport(py::object ops, Timeout wait_limit)
    : ops_(std::move(ops)), wait_limit_(wait_limit) {
  rank_ = ops_.attr("rank").cast<int>();
  size_ = ops_.attr("size").cast<int>();
}

GroupTransport::~GroupTransport() {
  if (!Py_IsInitialized()) {
    ops_.release();
    return;
  }
  py::gil_scoped_acquire gil;
  ops_ = py::object();
}

RequestPtr GroupTransport::isend(int peer, int tag, std::span<const std::byte> data) {
  check_address(peer, tag, "isend");
  count_send(data.size());
  py::gil_scoped_acquire gil;
  auto work = call(ops_, "isend", peer, tag, view(data));
  return std::make_unique<GroupRequest>(ops_, std::move(work), data.size(),
                                        "send to rank " + std::to_string(peer), wait_limit_);
}

RequestPtr GroupTransport::irecv(int peer, int tag, std::span<std::byte> buffer) {
  check_address(peer, tag, "irecv");
  py::gil_scoped_acquire gil;
  auto work = call(ops_, "irecv", peer, tag, view(buffer));
  return std::make_unique<GroupRequest>(ops_, std::move(work), buffer.size(),
                                        "receive from rank " + std::to_string(peer), wait_limit_);
}

void GroupTransport::allreduce(std::span<std::byte> data, DataType type, ReduceOp op,
                               Timeout timeout) {
  count_send(data.size());
  py::gil_scoped_acquire gil;
  call(ops_, "allreduce", view(data), type_name(type), op_name(op), seconds(timeout));
}

void GroupTransport::sum_integers(std::span<std::byte> data, std::size_t width, Timeout timeout) {
  const char* type = width == 1 ? "i8" : width == 4 ? "i32" : width == 8 ? "i64" : nullptr;
  if (type == nullptr) {
    throw InvalidArgument("a process group sums integers of 1, 4 or 8 bytes, not " +
                          std::to_string(width));
  }
  count_send(data.size());
  py::gil_scoped_acquire gil;
  call(ops_, "allreduce", view(data), type, "sum", seconds(timeout));
}

void GroupTransport::reduce_scatter(std::span<const std::byte>, std::span<std::byte>,
                                    std::span<const std::size_t>, DataType, ReduceOp, Timeout) {
  throw InvalidArgument("qccl's reduce-scatter runs in its MPI mode, not on a process group");
}

void GroupTransport::allgather(std::span<const std::byte> input, std::span<std::byte> output,
                               std::span<const std::size_t> byte_counts, Timeout timeout) {
  check_allgather_arguments(input.size(), output.size(), byte_counts, size_, rank_);
  count_send(input.size());
  py::gil_scoped_acquire gil;
  py::list counts;
  for (const std::size_t c : byte_counts) counts.append(c);
  call(ops_, "allgather", view(input), view(output), counts, seconds(timeout));
}

void GroupTransport::barrier(Timeout timeout) {
  py::gil_scoped_acquire gil;
  call(ops_, "barrier", seconds(timeout));
}

std::unique_ptr<Transport> GroupTransport::duplicate(Timeout) {
  throw InvalidArgument("a process group's qccl transport is not split into streams: the "
                        "process-group mode runs each bucket on the hook's thread");
}

std::unique_ptr<Transport> GroupTransport::split(int, int, Timeout) {
  throw InvalidArgument("a process group's qccl transport is not split into hosts: the "
                        "process-group mode moves whole vectors through the group's own "
                        "collectives; the hierarchical algorithm needs qccl's MPI mode");
}

// Nothing can stop torch.distributed's collectives from here: the process
// ends, as MPI_Abort would end it.
void GroupTransport::abort(std::string_view reason, int exit_code) noexcept {
  std::fprintf(stderr, "qccl: aborting (%.*s)\n", static_cast<int>(reason.size()), reason.data());
  std::fflush(stderr);
  std::_Exit(exit_code);
}

}  // namespace qccl::python
