// Reduce-scatter: the reduction of all ranks' vectors, each rank keeping one
// block of it.
#pragma once

#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// The default blocks: `count` elements split into `ranks` ranges as equal as
// `granularity` allows (earlier ranks get the extra units).
std::vector<Range> reduce_scatter_blocks(std::size_t count, int ranks, std::size_t granularity);

// Reduces `input` (same length on every rank) across ranks and writes block
// `comm.rank()` of the result to `output`. `counts` gives each rank's block
// length (it must sum to input.size() and every block but the last non-empty
// one must be a multiple of the reduction's granularity); empty means
// reduce_scatter_blocks(). Algorithm ring only.
void reduce_scatter(Communicator& comm, std::span<const float> input, std::span<float> output,
                    Reduction& reduction, const CollectiveOptions& options = {},
                    std::span<const std::size_t> counts = {});

}  // namespace qccl
