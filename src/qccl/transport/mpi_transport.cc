#include "qccl/transport/mpi_transport.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/transport/half_sum.h"

namespace qccl {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int code, std::string_view what) {
  if (code != MPI_SUCCESS) {
    throw CommError("MPI error in " + std::string(what) + ": " + mpi_error_text(code));
  }
}

int checked_count(std::size_t bytes, std::string_view what) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw InvalidArgument(std::string(what) + ": a single MPI message is limited to " +
                          std::to_string(INT_MAX) + " bytes, got " + std::to_string(bytes) +
                          "; split it into smaller chunks");
  }
  return static_cast<int>(bytes);
}

// Polls `done()` until it returns true (then returns true) or `timeout`
// passes (then false), spinning briefly and then yielding the core.
template <typename Done>
bool poll_for(Done&& done, Timeout timeout) {
  const auto deadline = Clock::now() + timeout;
  for (unsigned spin = 0;; ++spin) {
    if (done()) return true;
    if ((spin & 63U) == 63U && Clock::now() >= deadline) return done();
    if (spin >= 64) std::this_thread::yield();
  }
}

class MpiTransport;

class MpiRequest final : public Request {
 public:
  MpiRequest(std::mutex& mutex, MPI_Request request, bool is_recv, int peer, int tag,
             std::size_t bytes, int rank)
      : mutex_(mutex), request_(request), is_recv_(is_recv), peer_(peer), tag_(tag),
        bytes_(bytes), rank_(rank) {}

  // An abandoned request (its collective threw) is cancelled if it is a
  // receive, so MPI cannot write into a buffer that no longer exists. A send
  // cannot be cancelled reliably; it is released and the communicator that
  // abandoned it is already poisoned (see Communicator).
  ~MpiRequest() override {
    if (done_) return;
    std::lock_guard lock(mutex_);
    if (is_recv_) {
      // A cancelled receive completes at once in OpenMPI; the poll is bounded
      // all the same, and a receive that still has not finished is released.
      MPI_Cancel(&request_);
      const auto deadline = Clock::now() + std::chrono::seconds(1);
      int flag = 0;
      while (!flag && Clock::now() < deadline) MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
      if (flag) return;
    }
    MPI_Request_free(&request_);
  }

  bool test() override {
    if (done_) return true;
    std::lock_guard lock(mutex_);
    int flag = 0;
    MPI_Status status;
    const int rc = MPI_Test(&request_, &flag, &status);
    if (rc != MPI_SUCCESS) {
      done_ = true;  // MPI has released the request
      throw CommError(describe() + " failed: " + mpi_error_text(rc) +
                      (is_recv_ ? " (the ranks disagree on a message size?)" : ""));
    }
    if (!flag) return false;
    done_ = true;
    if (is_recv_) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      bytes_ = static_cast<std::size_t>(count);
    }
    return true;
  }

  bool wait_for(Timeout timeout) override {
    return poll_for([&] { return test(); }, timeout);
  }

  std::size_t bytes() const override { return bytes_; }

  std::string describe() const override {
    const std::string here = " on rank " + std::to_string(rank_) + " (tag " + std::to_string(tag_);
    if (is_recv_) {
      return "receive from rank " + std::to_string(peer_) + here + ", up to " +
             std::to_string(bytes_) + " bytes)";
    }
    return "send to rank " + std::to_string(peer_) + here + ", " + std::to_string(bytes_) +
           " bytes)";
  }

 private:
  std::mutex& mutex_;
  MPI_Request request_;
  bool is_recv_;
  bool done_ = false;
  int peer_, tag_;
  std::size_t bytes_;
  int rank_;
};

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::i64: return MPI_INT64_T;
    case DataType::f16: return MPI_UINT16_T;  // the bits, summed by fp16_sum below
  }
  throw InvalidArgument("unknown DataType");
}

// MPI_User_function summing fp16 values stored as 16-bit words: each sum is
// rounded to nearest even, as qccl's fp16 reduction does.
void fp16_sum(void* in, void* inout, int* count, MPI_Datatype*) {
  add_f16(static_cast<_Float16*>(inout), static_cast<const _Float16*>(in),
          static_cast<std::size_t>(*count));
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  throw InvalidArgument("unknown ReduceOp");
}

// Counts as the int array MPI takes, checked to fit.
std::vector<int> int_counts(std::span<const std::size_t> counts, std::string_view what) {
  std::vector<int> ints;
  for (std::size_t c : counts) ints.push_back(checked_count(c, what));
  return ints;
}

bool all_equal(std::span<const std::size_t> counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

// One MPI communicator. Every transport of the process — the world's and its
// duplicates — shares one lock around MPI calls, so MPI sees one call at a
// time whatever thread level it provides, while each communicator keeps its
// own message matching and collective order.
class MpiTransport final : public Transport {
 public:
  // Takes ownership of `comm` (a duplicate made for this transport).
  MpiTransport(MPI_Comm comm, std::shared_ptr<std::mutex> mpi_lock)
      : comm_(comm), lock_(std::move(mpi_lock)) {
    std::lock_guard lock(*lock_);  // other threads may be inside MPI already
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    void* value = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &flag);
    max_tag_ = flag ? *static_cast<int*>(value) : 32767;  // 32767: the MPI minimum
    check_mpi(MPI_Op_create(&fp16_sum, 1, &fp16_sum_op_), "MPI_Op_create");
  }

  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      std::lock_guard lock(*lock_);
      MPI_Op_free(&fp16_sum_op_);
      MPI_Comm_free(&comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int max_tag() const override { return max_tag_; }
  std::string_view name() const override { return "mpi"; }

  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    check_address(peer, tag, "isend");
    const int count = checked_count(data.size(), "isend");
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      check_mpi(MPI_Isend(data.data(), count, MPI_BYTE, peer, tag, comm_, &request), "MPI_Isend");
    }
    count_send(data.size());
    return std::make_unique<MpiRequest>(*lock_, request, false, peer, tag, data.size(), rank_);
  }

  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override {
    check_address(peer, tag, "irecv");
    const int count = checked_count(buffer.size(), "irecv");
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      check_mpi(MPI_Irecv(buffer.data(), count, MPI_BYTE, peer, tag, comm_, &request),
                "MPI_Irecv");
    }
    return std::make_unique<MpiRequest>(*lock_, request, true, peer, tag, buffer.size(), rank_);
  }

  // MPI_Iallreduce in pieces of at most INT_MAX elements, each polled to
  // completion with the remaining time. Out of place, from a copy: OpenMPI's
  // non-blocking allreduce falls back to a binomial reduce + broadcast for
  // MPI_IN_PLACE (the whole vector over one link per round: 29% of the wire
  // rate at 64 MiB on 4 emulated hosts at 1 Gbit/s), and uses the
  // bandwidth-optimal reduce-scatter + allgather otherwise (87%).
  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    check_not_interrupted("allreduce");
    std::lock_guard send_lock(send_mutex_);
    send_copy_.assign(data.begin(), data.end());
    const std::size_t elem = size_of(type);
    if (data.size() % elem != 0) {
      throw InvalidArgument("allreduce: " + std::to_string(data.size()) +
                            " bytes is not a whole number of " + std::string(to_string(type)) +
                            " elements");
    }
    const auto deadline = Clock::now() + timeout;
    const std::size_t total = data.size() / elem;
    const std::size_t piece = static_cast<std::size_t>(INT_MAX);
    std::size_t first = 0;
    do {
      const std::size_t n = std::min(piece, total - first);
      MPI_Request request;
      {
        std::lock_guard lock(*lock_);
        check_mpi(MPI_Iallreduce(send_copy_.data() + first * elem, data.data() + first * elem,
                                 static_cast<int>(n), mpi_type(type), op_for(type, op), comm_,
                                 &request),
                  "MPI_Iallreduce");
      }
      complete_collective(request, deadline, "MPI_Iallreduce");
      first += n;
    } while (first < total);
  }

  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override {
    check_reduce_scatter_arguments(input.size(), output.size(), counts, type, size_, rank_);
    check_not_interrupted("reduce-scatter");
    const auto ints = int_counts(counts, "reduce-scatter");
    std::unique_lock send_lock(send_mutex_, std::defer_lock);
    input = unaliased(input, output, send_lock);
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      if (all_equal(counts)) {
        check_mpi(MPI_Ireduce_scatter_block(input.data(), output.data(), ints[0], mpi_type(type),
                                            op_for(type, op), comm_, &request),
                  "MPI_Ireduce_scatter_block");
      } else {
        check_mpi(MPI_Ireduce_scatter(input.data(), output.data(), ints.data(), mpi_type(type),
                                      op_for(type, op), comm_, &request),
                  "MPI_Ireduce_scatter");
      }
    }
    complete_collective(request, Clock::now() + timeout, "MPI_Ireduce_scatter");
  }

  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    check_allgather_arguments(input.size(), output.size(), byte_counts, size_, rank_);
    check_not_interrupted("allgather");
    const auto ints = int_counts(byte_counts, "allgather");
    std::unique_lock send_lock(send_mutex_, std::defer_lock);
    input = unaliased(input, output, send_lock);  // an in-place allgather
    const bool equal = all_equal(byte_counts);
    std::vector<int> displacements;  // MPI_Iallgatherv's
    for (std::size_t r = 0, offset = 0; !equal && r < ints.size(); offset += byte_counts[r++]) {
      displacements.push_back(checked_count(offset, "allgather"));
    }
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      if (equal) {
        check_mpi(MPI_Iallgather(input.data(), ints[0], MPI_BYTE, output.data(), ints[0],
                                 MPI_BYTE, comm_, &request),
                  "MPI_Iallgather");
      } else {
        check_mpi(MPI_Iallgatherv(input.data(), ints[static_cast<std::size_t>(rank_)], MPI_BYTE,
                                  output.data(), ints.data(), displacements.data(), MPI_BYTE,
                                  comm_, &request),
                  "MPI_Iallgatherv");
      }
    }
    complete_collective(request, Clock::now() + timeout, "MPI_Iallgather");
  }

  void barrier(Timeout timeout) override {
    check_not_interrupted("barrier");
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    }
    complete_collective(request, Clock::now() + timeout, "MPI_Ibarrier");
  }

  // MPI_Comm_idup, polled like every other wait so a rank that never
  // duplicates cannot hang the others forever.
  std::unique_ptr<Transport> duplicate(Timeout timeout) override {
    check_not_interrupted("duplicate");
    MPI_Comm copy = MPI_COMM_NULL;
    MPI_Request request;
    {
      std::lock_guard lock(*lock_);
      check_mpi(MPI_Comm_idup(comm_, &copy, &request), "MPI_Comm_idup");
    }
    complete_collective(request, Clock::now() + timeout, "MPI_Comm_idup");
    return std::make_unique<MpiTransport>(copy, lock_);
  }

  // MPI_Comm_split has no nonblocking form: a polled barrier first, so
  // that it starts only once every rank has arrived and a rank that never
  // splits fails the others at the timeout instead of hanging them.
  std::unique_ptr<Transport> split(int color, int key, Timeout timeout) override {
    check_not_interrupted("split");
    if (color < 0) throw InvalidArgument("split: color must be >= 0, got " + std::to_string(color));
    barrier(timeout);
    MPI_Comm part = MPI_COMM_NULL;
    {
      std::lock_guard lock(*lock_);
      check_mpi(MPI_Comm_split(comm_, color, key, &part), "MPI_Comm_split");
    }
    return std::make_unique<MpiTransport>(part, lock_);
  }

  // The shared-memory split, then the lowest rank of each group, after a
  // polled barrier as in split().
  int host_key(Timeout timeout) override {
    check_not_interrupted("host_key");
    barrier(timeout);
    std::lock_guard lock(*lock_);
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    int lowest = rank_;
    const int status = MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    check_mpi(status, "MPI_Allreduce");
    return lowest;
  }

  // A collective in flight cannot be abandoned (MPI_Cancel and
  // MPI_Request_free are erroneous on one): it completes or times out.
  void interrupt(std::string_view reason) noexcept override {
    std::lock_guard lock(interrupt_mutex_);
    if (interrupt_reason_.empty()) interrupt_reason_ = reason.empty() ? "interrupted" : reason;
  }

  void abort(std::string_view reason, int exit_code) noexcept override {
    // MPI prints its own abort banner; the reason goes first so it is seen.
    std::fprintf(stderr, "qccl: rank %d aborting the MPI job: %.*s\n", rank_,
                 static_cast<int>(reason.size()), reason.data());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }

 private:
  void check_not_interrupted(std::string_view operation) {
    std::lock_guard lock(interrupt_mutex_);
    if (!interrupt_reason_.empty()) {
      throw CommError(std::string(operation) + " on rank " + std::to_string(rank_) +
                      " not started: the transport was interrupted (" + interrupt_reason_ + ")");
    }
  }

  // MPI forbids aliased send and receive buffers (short of MPI_IN_PLACE,
  // whose layout differs per collective): an input that overlaps the output
  // is sent from the reused copy, locking `send_lock` (on send_mutex_) while
  // the call uses it.
  std::span<const std::byte> unaliased(std::span<const std::byte> input,
                                       std::span<const std::byte> output,
                                       std::unique_lock<std::mutex>& send_lock) {
    if (input.empty() || output.empty()) return input;
    const auto less = std::less<const std::byte*>();
    const bool overlap = less(input.data(), output.data() + output.size()) &&
                         less(output.data(), input.data() + input.size());
    if (!overlap) return input;
    send_lock.lock();
    send_copy_.assign(input.begin(), input.end());
    return send_copy_;
  }

  // A nonblocking MPI collective cannot be cancelled: on timeout the request
  // is left to MPI and the caller's communicator is poisoned by the throw.
  void complete_collective(MPI_Request& request, Clock::time_point deadline, const char* what) {
    const auto remaining = std::chrono::duration_cast<Timeout>(deadline - Clock::now());
    const bool done = poll_for(
        [&] {
          std::lock_guard lock(*lock_);
          int flag = 0;
          check_mpi(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), what);
          return flag != 0;
        },
        std::max(remaining, Timeout(0)));
    if (!done) {
      throw TimeoutError(std::string(what) + " on rank " + std::to_string(rank_) +
                         " (a rank did not enter it) did not complete within " +
                         to_string(std::max(remaining, Timeout(0))));
    }
  }

  MPI_Op op_for(DataType type, ReduceOp op) const {
    if (type != DataType::f16) return mpi_op(op);
    if (op != ReduceOp::sum) throw InvalidArgument("allreduce: f16 supports sum only");
    return fp16_sum_op_;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::shared_ptr<std::mutex> lock_;
  MPI_Op fp16_sum_op_ = MPI_OP_NULL;
  int rank_ = 0;
  int size_ = 1;
  int max_tag_ = 32767;
  // The send buffer of allreduce and of aliased reduce-scatter and allgather
  // calls, kept so large calls do not page-fault a fresh one each time; its
  // mutex serialises the calls that use it.
  std::mutex send_mutex_;
  std::vector<std::byte> send_copy_;
  std::mutex interrupt_mutex_;
  std::string interrupt_reason_;  // non-empty once interrupted
};

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&provided_);
  } else {
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_), "MPI_Init_thread");
    owns_ = true;
  }
  if (provided_ < MPI_THREAD_SERIALIZED) {
    if (owns_) MPI_Finalize();
    throw CommError(
        "MPI provides only thread level " + std::to_string(provided_) +
        "; qccl needs MPI_THREAD_SERIALIZED or better: use an MPI built with thread support "
        "(Debian's OpenMPI has it)");
  }
}

MpiRuntime::~MpiRuntime() {
  if (owns_) MPI_Finalize();
}

std::string_view MpiRuntime::thread_level() const {
  return provided_ >= MPI_THREAD_MULTIPLE ? "multiple" : "serialized";
}

std::unique_ptr<Transport> MpiRuntime::world_transport() const {
  MPI_Comm comm = MPI_COMM_NULL;
  {
    std::lock_guard lock(*mpi_lock_);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  }
  return std::make_unique<MpiTransport>(comm, mpi_lock_);
}

}  // namespace qccl
