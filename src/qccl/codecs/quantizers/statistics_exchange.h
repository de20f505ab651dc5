// The exchange behind fitted quantization levels (Q-GenX's QAda, QSDP's
// learned levels): every rank's level statistics reach every rank, which
// add them in rank order, so every rank fits the same levels from the same
// numbers.
#pragma once

#include <optional>
#include <string_view>

#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl {

// One checked call named `what` (ranks at another step or with other
// levels get a MismatchError): each rank's occupied cells — their counts,
// then one allgather — summed in rank order into statistics on `local`'s
// grid. nullopt on every rank if any rank passed finite = false (its input
// held NaN or Inf; the caller's own exchange reports it). CommError for
// cells that are malformed.
std::optional<LevelStatistics> sum_level_statistics(Communicator& comm, const LevelStatistics& local,
                                                    bool finite, std::string_view what,
                                                    std::uint64_t step,
                                                    const CollectiveOptions& options);

}  // namespace qccl
