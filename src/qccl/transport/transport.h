// The transport: point-to-point byte messages between the ranks of one job,
// plus the transport's own element-wise allreduce (used for small scalar
// exchanges such as norms and call fingerprints, and on MPI as the
// uncompressed MPI_Allreduce baseline) and a barrier.
//
// Messages are addressed by (peer, tag). Between one sender and one receiver,
// messages with the same tag are matched in the order they were sent and the
// receives were posted (MPI's non-overtaking rule); every transport keeps it,
// so collectives may pipeline many chunks on one tag.
//
// A receive names a buffer of some capacity; the message may be shorter (its
// actual length is Request::bytes()), never longer: a longer message fails the
// receive with a CommError. This lets reductions change a chunk's byte size.
//
// Threading: a transport may be used from any thread. Operations that run
// concurrently (from different threads) need transports of their own:
// duplicate() gives one over the same ranks whose messages and collectives
// never match this one's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Completion handle of one isend or irecv.
class Request {
 public:
  virtual ~Request() = default;
  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // True once the transfer finished. Throws CommError if it failed.
  virtual bool test() = 0;
  // Waits up to `timeout` and returns whether the transfer finished; an
  // unfinished one stays pending. Throws CommError if it failed or the
  // transport was aborted.
  virtual bool wait_for(Timeout timeout) = 0;
  // Blocks until the transfer finished. Throws TimeoutError after `timeout`,
  // CommError if it failed or the transport was aborted.
  void wait(Timeout timeout);
  // Bytes transferred; for a receive, the length of the message received.
  // Valid once complete.
  virtual std::size_t bytes() const = 0;
  // "receive from rank 3 on rank 0 (tag 17, up to 4096 bytes)" — for error
  // messages.
  virtual std::string describe() const = 0;
};
using RequestPtr = std::unique_ptr<Request>;

// f16: IEEE half precision, each addition rounded to nearest even (MPI has
// no such type; the MPI transport sums it with a user-defined operation).
// It supports ReduceOp::sum only.
enum class DataType { f32, f64, i64, f16 };
enum class ReduceOp { sum, max, min };

std::size_t size_of(DataType type);
std::string_view to_string(DataType type);
std::string_view to_string(ReduceOp op);

// Traffic counters of one transport instance (this rank only).
struct TransportStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Largest tag value accepted by isend/irecv (tags are 0..max_tag()).
  virtual int max_tag() const = 0;
  // "mpi" or "in-process".
  virtual std::string_view name() const = 0;

  // Starts sending `data` to `peer`. The buffer must stay valid and unchanged
  // until the request completes.
  virtual RequestPtr isend(int peer, int tag, std::span<const std::byte> data) = 0;
  // Starts receiving a message of at most buffer.size() bytes from `peer`.
  virtual RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) = 0;

  // Element-wise reduction of `data` (count elements of `type`) across all
  // ranks, in place. Every rank ends with identical bytes. Blocking, bounded
  // by `timeout`. On MPI this is MPI_Allreduce (the uncompressed baseline).
  virtual void allreduce(std::span<std::byte> data, DataType type, ReduceOp op,
                         Timeout timeout) = 0;
  // The element-wise reduction of every rank's `input`, split into blocks:
  // rank r keeps the counts[r] elements of `type` that follow the blocks of
  // ranks 0..r-1, in `output`. Every rank passes the same counts, summing to
  // input's length. On MPI: MPI_Reduce_scatter_block (equal counts) or
  // MPI_Reduce_scatter. Blocking, bounded by `timeout`.
  virtual void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                              std::span<const std::size_t> counts, DataType type, ReduceOp op,
                              Timeout timeout) = 0;
  // Rank r contributes byte_counts[r] bytes; `output` receives every rank's
  // contribution in rank order. Every rank passes the same byte counts. On
  // MPI: MPI_Allgather (equal counts) or MPI_Allgatherv. Blocking, bounded by
  // `timeout`.
  virtual void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                         std::span<const std::size_t> byte_counts, Timeout timeout) = 0;
  // Returns once every rank has entered the barrier, or throws after `timeout`.
  virtual void barrier(Timeout timeout) = 0;

  // A transport over the same ranks whose messages and transport-level
  // collectives never match this one's (MPI_Comm_dup), so that independent
  // operations can run on the two at the same time from different threads.
  // Collective: every rank duplicates its transports in the same order.
  // Bounded by `timeout`.
  virtual std::unique_ptr<Transport> duplicate(Timeout timeout) = 0;

  // A transport over the ranks that pass the same `color` (>= 0), ranked
  // by (key, rank) (MPI_Comm_split), whose messages and collectives never
  // match this one's. Collective over every rank of this transport, in the
  // same order as duplicate(); bounded by `timeout`. The hierarchical
  // collectives split a communicator into its hosts and across them.
  virtual std::unique_ptr<Transport> split(int color, int key, Timeout timeout) = 0;

  // A number that exactly the ranks on this rank's host share: on MPI the
  // lowest rank of this transport in MPI_Comm_split_type's shared-memory
  // group (OpenMPI's node: a machine, or an emulated host); in process every
  // rank is its own host, its rank. Collective; bounded by `timeout`.
  virtual int host_key(Timeout timeout) = 0;

  // Stops this rank's transport-level collectives on this transport (not
  // its point-to-point requests, which their waiters stop): later calls fail
  // at once with a CommError naming `reason`. One waiting now stops too where
  // that is safe: in process it withdraws its contribution and fails; on MPI
  // it runs to completion or to its timeout, since MPI cannot cancel a
  // collective that has started and it may still write the caller's buffer.
  // Other transports (the world's, other duplicates) are unaffected. A
  // cancelled stream's communicator calls it on its own duplicate.
  virtual void interrupt(std::string_view reason) noexcept = 0;

  // Ends communication for every rank of the job: the in-process transport
  // fails every pending and later wait of every rank with a CommError naming
  // `reason`; MPI calls MPI_Abort with `exit_code`, which mpirun then exits
  // with (the in-process transport has no process to end and ignores it).
  // Use it when a rank cannot continue, so its peers do not wait for it
  // until their timeouts.
  virtual void abort(std::string_view reason, int exit_code) noexcept = 0;

  TransportStats stats() const {
    return {bytes_sent_.load(std::memory_order_relaxed),
            messages_sent_.load(std::memory_order_relaxed)};
  }

 protected:
  void count_send(std::size_t bytes) {
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    messages_sent_.fetch_add(1, std::memory_order_relaxed);
  }
  // Throws InvalidArgument unless 0 <= peer < size() and 0 <= tag <= max_tag().
  void check_address(int peer, int tag, std::string_view what) const;

 private:
  std::atomic<std::uint64_t> bytes_sent_{0};
  std::atomic<std::uint64_t> messages_sent_{0};
};

// Typed helpers over Transport::allreduce.
template <typename T>
constexpr DataType data_type_of();
template <>
constexpr DataType data_type_of<float>() { return DataType::f32; }
template <>
constexpr DataType data_type_of<double>() { return DataType::f64; }
template <>
constexpr DataType data_type_of<std::int64_t>() { return DataType::i64; }

template <typename T>
void allreduce_values(Transport& transport, std::span<T> values, ReduceOp op, Timeout timeout) {
  transport.allreduce(std::as_writable_bytes(values), data_type_of<T>(), op, timeout);
}

// Applies `op` element-wise: acc[i] = op(acc[i], in[i]). Shared by the
// transports so that every transport reduces identically.
void reduce_into(std::span<std::byte> acc, std::span<const std::byte> in, DataType type,
                 ReduceOp op);

// Checks the arguments of Transport::reduce_scatter on this rank (counts
// per rank, lengths, whole elements); throws InvalidArgument.
void check_reduce_scatter_arguments(std::size_t input_bytes, std::size_t output_bytes,
                                    std::span<const std::size_t> counts, DataType type, int ranks,
                                    int rank);
// Checks an allgather's arguments on this rank: one count per rank, this
// rank's input of counts[rank] and an output of their total, all in `unit`
// ("bytes", "elements"); throws InvalidArgument. Every allgather, of the
// transport or of the layers above, checks with it.
void check_allgather_arguments(std::size_t input, std::size_t output,
                               std::span<const std::size_t> counts, int ranks, int rank,
                               std::string_view unit = "bytes");

}  // namespace qccl
QCCL_API_END
