#include "qccl/collectives/communicator.h"

#include <map>

#include "qccl/common/errors.h"

namespace qccl {

Communicator::Communicator(Transport& transport, CommunicatorOptions options)
    : transport_(transport), options_(options) {
  if (options_.timeout.count() <= 0) {
    throw InvalidArgument("communicator timeout must be positive, got " +
                          to_string(options_.timeout));
  }
}

void Communicator::poison(std::string reason) {
  if (poison_.empty()) poison_ = std::move(reason);
}

void Communicator::run(const Fingerprint& fingerprint, Timeout timeout,
                       const std::function<void(int tag)>& body) {
  if (poisoned()) {
    throw CommError(std::string(fingerprint.operation()) +
                    " called on a communicator that an earlier failure made unusable (" +
                    poison_ + "); create a new communicator or restart the job");
  }
  const std::uint64_t sequence = sequence_++;
  // Tag 0 is left for point-to-point users; collectives cycle through 1..max.
  const int tag =
      static_cast<int>(1 + sequence % static_cast<std::uint64_t>(transport_.max_tag()));
  try {
    if (options_.check_args && size() > 1) {
      Fingerprint full = fingerprint;
      full.add("call number", static_cast<std::int64_t>(sequence));
      verify(full, timeout);
    }
    body(tag);
  } catch (const MismatchError&) {
    throw;
  } catch (const Error& e) {
    poison(std::string(fingerprint.operation()) + " call " + std::to_string(sequence) +
           " failed on rank " + std::to_string(rank()) + ": " + e.what());
    throw;
  }
}

void Communicator::wait(Request& request, Timeout timeout, std::string_view operation) {
  try {
    request.wait(timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(std::string(operation) + ": " + e.what() +
                       "; is that rank alive, and do all ranks make the same calls in the "
                       "same order?");
  } catch (const CommError& e) {
    throw CommError(std::string(operation) + ": " + e.what());
  }
}

std::span<std::byte> Communicator::scratch(Scratch which, std::size_t bytes) {
  auto& buffer = scratch_[static_cast<int>(which)];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return std::span<std::byte>(buffer).first(bytes);
}

// One MAX allreduce of [fields..., -fields...] yields every field's maximum
// and minimum over the ranks; they agree everywhere iff max == min. Every
// rank sees the same result, so all raise the mismatch together.
void Communicator::verify(const Fingerprint& fingerprint, Timeout timeout) {
  constexpr std::size_t k = Fingerprint::kMaxFields;
  std::vector<std::int64_t> mine(k, 0);
  for (std::size_t i = 0; i < fingerprint.field_count(); ++i) mine[i] = fingerprint.field_value(i);
  std::vector<std::int64_t> extremes(2 * k);
  for (std::size_t i = 0; i < k; ++i) {
    extremes[i] = mine[i];
    extremes[k + i] = -mine[i];
  }
  try {
    allreduce_values<std::int64_t>(transport_, extremes, ReduceOp::max, timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(std::string(fingerprint.operation()) +
                       ": the argument check across ranks timed out (" + e.what() +
                       "); some rank did not call " + std::string(fingerprint.operation()));
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (extremes[i] != -extremes[k + i]) report_mismatch(fingerprint, mine, timeout);
  }
}

// Gathers every rank's fields (each rank fills its own row, a SUM allreduce
// assembles the table) and names, for the first differing field, which ranks
// hold which value.
void Communicator::report_mismatch(const Fingerprint& fingerprint,
                                   const std::vector<std::int64_t>& mine, Timeout timeout) {
  constexpr std::size_t k = Fingerprint::kMaxFields;
  const auto n = static_cast<std::size_t>(size());
  std::vector<std::int64_t> table(n * k, 0);
  for (std::size_t i = 0; i < k; ++i) table[static_cast<std::size_t>(rank()) * k + i] = mine[i];
  allreduce_values<std::int64_t>(transport_, table, ReduceOp::sum, timeout);

  // The operation field first: if the operations differ, other fields are
  // not comparable.
  for (std::size_t i = 0; i < fingerprint.field_count(); ++i) {
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
      if (!fingerprint.field_is_text(i)) detail += " have " + std::to_string(value);
    }
    std::string message = std::string(fingerprint.operation()) + ": ranks disagree on '" +
                          std::string(fingerprint.field_name(i)) + "': " + detail;
    if (fingerprint.field_is_text(i)) {
      message += " (this rank, " + std::to_string(rank()) + ", has '" +
                 std::string(fingerprint.field_text(i)) + "')";
    }
    message += "; every rank must make the same collective calls with the same arguments";
    throw MismatchError(message);
  }
  throw MismatchError(std::string(fingerprint.operation()) +
                      ": ranks disagree on the call's arguments");
}

}  // namespace qccl
