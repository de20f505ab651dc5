#include "qccl/scheduling/rank_values.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "qccl/collectives/allgather.h"

namespace qccl {

std::vector<double> gather_over_ranks(Communicator& comm, std::span<const double> mine,
                                      const CollectiveOptions& options) {
  const std::size_t bytes = mine.size() * sizeof(double);
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), bytes);
  std::vector<std::byte> gathered(bytes * counts.size());
  CollectiveOptions exchange;
  exchange.timeout = options.timeout;
  allgatherv_bytes(comm, std::as_bytes(mine), counts, gathered, exchange);
  std::vector<double> all(mine.size() * counts.size());
  if (!gathered.empty()) std::memcpy(all.data(), gathered.data(), gathered.size());
  return all;
}

std::vector<double> max_over_ranks(Communicator& comm, std::span<const double> mine,
                                   const CollectiveOptions& options) {
  const std::vector<double> all = gather_over_ranks(comm, mine, options);
  std::vector<double> largest(mine.begin(), mine.end());
  for (std::size_t at = 0; at < all.size(); ++at) {
    double& slot = largest[at % mine.size()];
    slot = std::max(slot, all[at]);
  }
  return largest;
}

}  // namespace qccl
