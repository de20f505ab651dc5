// A few fp64 values from every rank, bit for bit: what the scheduler's
// measurements and profiles combine so that every rank plans alike.
#pragma once

#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl {

// Collective: every rank's `mine` (the same count on every rank), rank
// after rank, identical on every rank (raw bytes by allgather; only
// options.timeout is used).
std::vector<double> gather_over_ranks(Communicator& comm, std::span<const double> mine,
                                      const CollectiveOptions& options);

// Collective: the element-wise maximum over ranks of `mine`, identical on
// every rank.
std::vector<double> max_over_ranks(Communicator& comm, std::span<const double> mine,
                                   const CollectiveOptions& options);

}  // namespace qccl
