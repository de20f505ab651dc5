// Ending a step that each rank does on its own (writing its checkpoint file,
// reading it back, checking its output paths) together: when one rank
// failed, every rank learns it and stops with the same message, instead of
// the others waiting for it in the next collective until the timeout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

// Every rank's `row` (all of the same length), rank r's at [r·k, (r+1)·k),
// on every rank; one checked call named `what`.
std::vector<std::int64_t> rows_of_ranks(Communicator& comm, std::span<const std::int64_t> row,
                                        std::string_view what);

// `failure` is this rank's error message, empty when it succeeded. Returns
// "" on every rank when every rank succeeded, else the same text on every
// rank: the failed ranks' messages ("rank 1: ...; rank 3: ..." — just the
// message on a single rank), at most a few of them in full. Costs one small
// exchange, and a second only when some rank failed.
std::string failures_of_ranks(Communicator& comm, std::string_view what,
                              const std::string& failure);

}  // namespace qccl::engines
