#include "qccl/codecs/quantizers/statistics_exchange.h"

#include <string>
#include <vector>

#include "qccl/collectives/allgather.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/common/errors.h"

namespace qccl {

std::optional<LevelStatistics> sum_level_statistics(Communicator& comm, const LevelStatistics& local,
                                                    bool finite, std::string_view what,
                                                    std::uint64_t step,
                                                    const CollectiveOptions& options) {
  std::vector<double> mine{finite ? 0.0 : 1.0};
  if (finite) {
    const auto cells = local.occupied_cells();
    mine.insert(mine.end(), cells.begin(), cells.end());
  }
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::size_t> counts;
  std::vector<double> all;
  Fingerprint fingerprint("level statistics");
  fingerprint.add_text("what", what).add("step", static_cast<std::int64_t>(step));
  const Timeout timeout = comm.timeout(options.timeout);
  run_collective(comm, fingerprint, timeout, [&](int tag) {
    counts = allgather_counts_body(comm, tag, mine.size(), timeout);
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    all.resize(total);
    std::vector<std::size_t> byte_counts(n);
    for (std::size_t q = 0; q < n; ++q) byte_counts[q] = counts[q] * sizeof(double);
    allgatherv_bytes_body(comm, tag, std::as_bytes(std::span<const double>(mine)), byte_counts,
                          std::as_writable_bytes(std::span<double>(all)), options);
  });
  LevelStatistics total = local;
  total.clear();
  bool all_finite = true;
  std::size_t at = 0;
  for (std::size_t q = 0; q < n; ++q) {
    const std::span<const double> theirs(all.data() + at, counts[q]);
    at += counts[q];
    if (theirs.empty() || theirs.front() != 0.0) {
      all_finite = false;
      continue;
    }
    try {
      total.add_occupied_cells(theirs.subspan(1));
    } catch (const InvalidArgument& e) {
      throw CommError(std::string(what) + ": rank " + std::to_string(q) +
                      "'s level statistics are malformed (corrupt message?): " + e.what());
    }
  }
  if (!all_finite) return std::nullopt;
  return total;
}

}  // namespace qccl
