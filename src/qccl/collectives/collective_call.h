// A checked collective call on a communicator: the tag, the check that every
// rank made the same call, the statistics exchanged with it, and the poison
// that a failure mid-flight leaves.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "qccl/collectives/call_check.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// One collective call, in two parts.
//
// Constructing it starts the call on this rank: it fails at once if the
// communicator is poisoned, takes the call's sequence number and tag, and
// checks the call across ranks — one MAX allreduce of the fingerprint
// (operation, arguments, call number) folded with the caller's statistics, if
// any (call_check.h). Ranks that disagree all raise a MismatchError naming
// the field and the ranks; no data has moved, so the communicator stays
// usable. The caller may then act on the gathered statistics (raise a
// NonFiniteError, choose a scale) on every rank alike — still before any
// data moves, so still without poisoning.
//
// move() runs the data movement on the call's tag; any failure in it poisons
// the communicator.
class CollectiveCall {
 public:
  CollectiveCall(Communicator& comm, Fingerprint fingerprint, Timeout timeout,
                 const CallStatistics* statistics = nullptr);

  int tag() const { return tag_; }
  std::uint64_t sequence() const { return sequence_; }
  Timeout timeout() const { return timeout_; }
  // Every rank's statistics (only when the caller gave some).
  const GatheredStatistics& statistics() const { return statistics_; }

  void move(const std::function<void(int tag)>& body);

 private:
  [[noreturn]] void report_mismatch(const std::vector<std::int64_t>& mine);
  // The error's context: "stream 'gradients': " for a split communicator.
  std::string where() const;

  Communicator& comm_;
  Fingerprint fingerprint_;
  Timeout timeout_;
  std::uint64_t sequence_ = 0;
  int tag_ = 0;
  GatheredStatistics statistics_;
};

// Runs one collective call with no statistics: the check, then `body` on
// the call's tag.
void run_collective(Communicator& comm, const Fingerprint& fingerprint, Timeout timeout,
                    const std::function<void(int tag)>& body);

}  // namespace qccl
QCCL_API_END
