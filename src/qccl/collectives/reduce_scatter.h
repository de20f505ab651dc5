// Reduce-scatter: the reduction of all ranks' vectors, each rank keeping one
// block of it.
#pragma once

#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// The default blocks: `count` elements split into `ranks` ranges as equal as
// `granularity` allows (earlier ranks get the extra units).
std::vector<Range> reduce_scatter_blocks(std::size_t count, int ranks, std::size_t granularity);

// The blocks given by per-rank counts, checked: one per rank, adding up to
// `total`, every block but the last non-empty one a multiple of
// `granularity`. Throws InvalidArgument.
std::vector<Range> blocks_from_counts(std::span<const std::size_t> counts, std::size_t total,
                                      std::size_t granularity, int ranks);

// Reduces `input` (same length on every rank) across ranks and writes block
// `comm.rank()` of the result to `output`. `counts` gives each rank's block
// length (see blocks_from_counts); empty means reduce_scatter_blocks().
// Algorithms ring, halving-doubling and native (MPI_Reduce_scatter_block, for
// reductions MPI can do).
void reduce_scatter(Communicator& comm, std::span<const float> input, std::span<float> output,
                    Reduction& reduction, const CollectiveOptions& options = {},
                    std::span<const std::size_t> counts = {});

// The data movement of a reduce-scatter inside a checked call: encode the
// whole input, ring or halving-doubling reduce-scatter of `blocks`, decode
// this rank's block. With a non-empty `own` (as long as the input), this
// rank's own quantized input, Q(input), is written there.
void reduce_scatter_body(Communicator& comm, int tag, std::span<const float> input,
                         std::span<const Range> blocks, std::span<float> output,
                         Reduction& reduction, const CollectiveOptions& options,
                         std::span<float> own = {});

}  // namespace qccl
QCCL_API_END
