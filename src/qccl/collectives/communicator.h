// A communicator: the collectives' view of one transport. It assigns each
// collective call its own tag (the call and its check across ranks:
// collective_call.h), checks that all ranks made the same call,
// bounds every wait by a timeout, keeps reusable scratch buffers, and once a
// call fails mid-flight it is poisoned: every later call fails at once with
// the original cause, instead of exchanging messages with peers that are in
// an unknown state.
//
// All ranks must call collectives on a communicator in the same order, and
// one thread drives a communicator at a time. Operations that should run at
// the same time (an allgather of the next layer's weights while this layer's
// gradients are reduce-scattered) go to communicators split() from this one:
// each has its own tags, call sequence, fingerprints, scratch and poison, on
// a duplicate of the transport (MPI_Comm_dup), so nothing of one can match
// the other. The transport must outlive the communicator.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "qccl/collectives/fingerprint.h"
#include "qccl/common/duration.h"
#include "qccl/common/export.h"
#include "qccl/transport/transport.h"

QCCL_API_BEGIN
namespace qccl {

class HostGroups;
class ProgressWatch;

struct CommunicatorOptions {
  // Bound on every wait unless a call overrides it.
  Timeout timeout = std::chrono::seconds(300);
  // Exchange a fingerprint of each call's arguments before moving data, so
  // that ranks that disagree (length, operation, algorithm, reduction, root)
  // get a MismatchError naming the ranks and the field instead of a hang or a
  // wrong result. Costs one small allreduce per call — none extra for a codec
  // step, whose norm exchange carries it.
  bool check_args = true;
  // Where this process records what each rank is doing (progress_watch.h),
  // for the engines to mark their computation; null: nothing is watched.
  // Owned by whoever launched the ranks, and outlives the communicator.
  ProgressWatch* progress = nullptr;
  // Ranks per host for the hierarchical algorithm, in consecutive groups
  // (rank r on host r / ranks_per_host); 0: what the transport knows (MPI:
  // which ranks share memory; in process, one rank per host).
  int ranks_per_host = 0;
};

// The communicator's reusable buffers: the encoded vector, received chunks,
// and decoded values awaiting a sum.
enum class Scratch { work, staging, decoded };

class Communicator {
 public:
  explicit Communicator(Transport& transport, CommunicatorOptions options = {},
                        std::string name = "world");
  ~Communicator();

  // A communicator over the same ranks with its own tag space, call
  // sequence, fingerprints, scratch and poison (a duplicate of the
  // transport), named `name` in errors: "stream 'gradients': ...".
  // Collective: every rank splits its communicators in the same order.
  std::unique_ptr<Communicator> split(std::string name);

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  Transport& transport() { return transport_; }
  const Transport& transport() const { return transport_; }
  const std::string& name() const { return name_; }
  const CommunicatorOptions& options() const { return options_; }
  // A call's timeout: its own override, else the communicator's.
  Timeout timeout(const std::optional<Timeout>& override) const {
    return override.value_or(options_.timeout);
  }
  bool poisoned() const { return poisoned_.load(); }
  // Latency-bound exchanges run so far: call checks, and small exchanges
  // inside calls (small_allreduce). A codec step makes one.
  std::uint64_t exchanges() const { return exchanges_.load(); }
  // Records one exchange that sent `bytes` from this rank.
  void count_exchange(std::uint64_t bytes) {
    exchanges_.fetch_add(1, std::memory_order_relaxed);
    exchange_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Bytes this rank has sent on the communicator's transport as data, i.e.
  // without the exchanges' few hundred bytes per call (what the benchmarks
  // and the trainer report as "sent"), and on its host groups' (the
  // hierarchical algorithm's point-to-point traffic; their transport-level
  // collectives, like native's, count nothing).
  // Read from another thread while a call runs, the two counters may be a
  // few exchanges apart; the difference is clamped at zero.
  std::uint64_t data_bytes_sent() const;

  // Waits for `request`, naming `operation` in the error on failure. Waits in
  // short slices, so that cancel() from another thread stops it promptly.
  void wait(Request& request, Timeout timeout, std::string_view operation);

  // A reusable buffer of at least `bytes` bytes, kept across calls so large
  // collectives do not page-fault fresh memory every time.
  std::span<std::byte> scratch(Scratch which, std::size_t bytes);
  // The same buffer as `count` floats (it comes from operator new, aligned
  // for any fundamental type).
  std::span<float> float_scratch(Scratch which, std::size_t count) {
    return {reinterpret_cast<float*>(scratch(which, count * sizeof(float)).data()), count};
  }

  // Marks the communicator unusable with `reason` (the first reason wins).
  // Thread-safe.
  void poison(std::string reason);
  // Poisons it and makes the call in flight, if any, fail at its next wait;
  // a split communicator also interrupts its transport (a transport-level
  // collective in flight stops where the transport can stop it safely).
  // Thread-safe: a caller that gave up waiting for an operation uses it.
  void cancel(std::string reason);
  std::string poison_reason() const;

  // This communicator's ranks within and across hosts (host_groups.h),
  // split from it on the first call, which is collective: every rank makes
  // it in the same call (the hierarchical collectives do, inside a checked
  // call).
  HostGroups& host_groups();

 private:
  friend class CollectiveCall;

  std::unique_ptr<Transport> owned_;  // a split communicator's duplicate
  Transport& transport_;
  CommunicatorOptions options_;
  std::string name_;
  std::uint64_t sequence_ = 0;
  mutable std::mutex poison_mutex_;
  std::atomic<bool> poisoned_{false}, cancelled_{false};
  std::atomic<std::uint64_t> exchanges_{0}, exchange_bytes_{0};
  std::string poison_;
  std::vector<std::byte> scratch_[3];
  mutable std::mutex groups_mutex_;  // host_groups_ against cancel() from another thread
  std::unique_ptr<HostGroups> host_groups_;
};

}  // namespace qccl
QCCL_API_END
