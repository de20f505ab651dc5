#include "qccl/collectives/collective_call.h"

#include <map>

#include "qccl/collectives/small_allreduce.h"
#include "qccl/common/errors.h"

namespace qccl {

void run_collective(Communicator& comm, const Fingerprint& fingerprint, Timeout timeout,
                    const std::function<void(int tag)>& body) {
  CollectiveCall(comm, fingerprint, timeout).move(body);
}

CollectiveCall::CollectiveCall(Communicator& comm, Fingerprint fingerprint, Timeout timeout,
                               const CallStatistics* statistics)
    : comm_(comm), fingerprint_(std::move(fingerprint)), timeout_(timeout) {
  if (comm_.poisoned()) {
    throw CommError(where() + std::string(fingerprint_.operation()) +
                    " called on a communicator that an earlier failure made unusable (" +
                    comm_.poison_reason() + "); create a new communicator or restart the job");
  }
  sequence_ = comm_.sequence_++;
  // Tag 0 is left for point-to-point users; collectives cycle through 1..max.
  tag_ = static_cast<int>(1 + sequence_ % static_cast<std::uint64_t>(comm_.transport_.max_tag()));
  const bool check = comm_.options_.check_args && comm_.size() > 1;
  if (!check && statistics == nullptr) return;
  fingerprint_.add("call number", static_cast<std::int64_t>(sequence_));
  auto exchanged = call_check_buffer(check ? &fingerprint_ : nullptr, statistics, comm_.size(),
                                     comm_.rank());
  const auto mine = exchanged;
  const std::string operation(fingerprint_.operation());
  try {
    small_allreduce(comm_, tag_, exchanged, ReduceOp::max, timeout_,
                    operation + ": the argument check across ranks");
  } catch (const TimeoutError& e) {
    comm_.poison(operation + " call " + std::to_string(sequence_) + ": " + e.what());
    throw TimeoutError(where() + e.what() + " (did every rank call " + operation + "?)");
  } catch (const Error& e) {
    comm_.poison(operation + " call " + std::to_string(sequence_) + ": " + e.what());
    if (comm_.name() == "world") throw;
    rethrow_with_context(where());
  }
  if (check && !fingerprints_agree(exchanged)) report_mismatch(mine);
  if (statistics != nullptr) statistics_ = gathered_statistics(exchanged, comm_.size());
}

// Any failure once data moves poisons the communicator — a MismatchError
// excepted, which every rank raises alike before anything is sent — be it a
// qccl error or another (std::bad_alloc mid-transfer). A stream's errors
// gain its name; errors that are not qccl's pass unchanged.
void CollectiveCall::move(const std::function<void(int tag)>& body) {
  try {
    body(tag_);
  } catch (const MismatchError&) {
    throw;
  } catch (const std::exception& e) {
    comm_.poison(where() + std::string(fingerprint_.operation()) + " call " +
                 std::to_string(sequence_) + " failed on rank " + std::to_string(comm_.rank()) +
                 ": " + e.what());
    if (comm_.name() == "world") throw;
    rethrow_with_context(where());
  }
}

std::string CollectiveCall::where() const {
  return comm_.name() == "world" ? std::string() : "stream '" + comm_.name() + "': ";
}

// Gathers every rank's fields (each rank fills its own row, a SUM allreduce
// assembles the table) and names, for the first differing field, which ranks
// hold which value.
void CollectiveCall::report_mismatch(const std::vector<std::int64_t>& mine) {
  constexpr std::size_t k = Fingerprint::kMaxFields;
  const auto n = static_cast<std::size_t>(comm_.size());
  const auto rank = static_cast<std::size_t>(comm_.rank());
  std::vector<std::int64_t> table(n * k, 0);
  for (std::size_t i = 0; i < k; ++i) table[rank * k + i] = mine[i];
  small_allreduce(comm_, tag_, table, ReduceOp::sum, timeout_,
                  std::string(fingerprint_.operation()) + ": gathering the arguments that differ");

  // The operation field first: if the operations differ, other fields are
  // not comparable.
  const std::string operation(fingerprint_.operation());
  for (std::size_t i = 0; i < fingerprint_.field_count(); ++i) {
    std::map<std::int64_t, std::string> groups;
    for (std::size_t r = 0; r < n; ++r) {
      auto& ranks = groups[table[r * k + i]];
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    }
    if (groups.size() == 1) continue;
    std::string detail;
    for (const auto& [value, ranks] : groups) {
      if (!detail.empty()) detail += "; ";
      detail += "ranks {" + ranks + "}";
      if (!fingerprint_.field_is_text(i)) detail += " have " + std::to_string(value);
    }
    std::string message = where() + operation + ": ranks disagree on '" +
                          std::string(fingerprint_.field_name(i)) + "': " + detail;
    if (fingerprint_.field_is_text(i)) {
      message += " (this rank, " + std::to_string(rank) + ", has '" +
                 std::string(fingerprint_.field_text(i)) + "')";
    }
    message += "; every rank must make the same collective calls with the same arguments";
    throw MismatchError(message);
  }
  throw MismatchError(where() + operation + ": ranks disagree on the call's arguments");
}

}  // namespace qccl
