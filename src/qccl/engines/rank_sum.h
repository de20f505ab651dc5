// Summing a few fp64 values over ranks, for the trainer's metrics and as a
// barrier between checkpoint phases.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

// Replaces `values` on every rank by their sums over ranks, as one checked
// call named `what` (ranks that call it with another count or name get a
// MismatchError). Returns only once every rank has called it.
void sum_over_ranks(Communicator& comm, std::span<double> values, std::string_view what);

}  // namespace qccl::engines
