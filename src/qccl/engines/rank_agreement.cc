#include "qccl/engines/rank_agreement.h"

#include <algorithm>
#include <cstring>

#include "qccl/collectives/collective_call.h"
#include "qccl/transport/transport.h"

namespace qccl::engines {
namespace {

// How much of each failed rank's message travels, and how many are shown.
constexpr std::size_t kMessageWords = 64;  // 512 bytes
constexpr std::size_t kShownRanks = 4;

std::vector<std::int64_t> packed(const std::string& message) {
  std::vector<std::int64_t> words(kMessageWords + 1, 0);
  const std::size_t bytes = std::min(message.size(), kMessageWords * 8);
  words[0] = static_cast<std::int64_t>(bytes);
  std::memcpy(words.data() + 1, message.data(), bytes);
  return words;
}

std::string unpacked(std::span<const std::int64_t> words) {
  const auto bytes = static_cast<std::size_t>(std::clamp<std::int64_t>(words[0], 0, kMessageWords * 8));
  std::string message(bytes, '\0');
  std::memcpy(message.data(), words.data() + 1, bytes);
  return message;
}

}  // namespace

// Each rank fills its own row of a zeroed table; a SUM allreduce assembles
// the table on every rank, exactly (every other rank adds zero).
std::vector<std::int64_t> rows_of_ranks(Communicator& comm, std::span<const std::int64_t> row,
                                        std::string_view what) {
  const auto k = row.size();
  std::vector<std::int64_t> table(k * static_cast<std::size_t>(comm.size()), 0);
  std::copy(row.begin(), row.end(), table.begin() + static_cast<std::ptrdiff_t>(k * comm.rank()));
  Fingerprint fingerprint("rows of ranks");
  fingerprint.add_text("what", what).add("row length", static_cast<std::int64_t>(k));
  const Timeout timeout = comm.timeout(std::nullopt);
  run_collective(comm, fingerprint, timeout, [&](int) {
    if (comm.size() > 1) {
      allreduce_values<std::int64_t>(comm.transport(), table, ReduceOp::sum, timeout);
    }
  });
  return table;
}

std::string failures_of_ranks(Communicator& comm, std::string_view what,
                              const std::string& failure) {
  const std::int64_t failed = failure.empty() ? 0 : 1;
  const auto flags = rows_of_ranks(comm, std::span(&failed, 1), what);
  if (std::all_of(flags.begin(), flags.end(), [](std::int64_t f) { return f == 0; })) return "";
  const auto messages = rows_of_ranks(comm, packed(failure), std::string(what) + ": messages");
  if (comm.size() == 1) return failure;
  std::string text;
  std::size_t shown = 0, more = 0;
  for (std::size_t r = 0; r < flags.size(); ++r) {
    if (flags[r] == 0) continue;
    if (shown == kShownRanks) {
      ++more;
      continue;
    }
    const auto row = std::span(messages).subspan(r * (kMessageWords + 1), kMessageWords + 1);
    text += (text.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": ") + unpacked(row);
    ++shown;
  }
  if (more > 0) text += "; and " + std::to_string(more) + " more rank(s)";
  return text;
}

}  // namespace qccl::engines
