// Recursive halving and doubling for any rank count: allreduce (the
// tree of Global-QSGD §7), and its two halves as reduce-scatter and
// allgather.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Number of blocks the halving-doubling allreduce splits the vector into:
// the largest power of two not above the rank count.
std::size_t halving_doubling_blocks(int ranks);

enum class HalvingDoublingPhases {
  // `layout` holds halving_doubling_blocks(n) segments; every rank ends with
  // every segment reduced.
  allreduce,
  // `layout` holds n segments; rank r ends owning segment r reduced.
  reduce_scatter,
  // `layout` holds n segments; rank r starts with segment r and ends with all.
  allgather,
};

// Runs the phases over `layout` (K chunks per segment) held in `work`.
// `reduction` may be null for allgather.
void run_halving_doubling(Communicator& comm, int tag, SlotLayout& layout,
                          std::span<std::byte> work, Reduction* reduction,
                          HalvingDoublingPhases phases, const CollectiveOptions& options,
                          Timeout timeout, std::string_view operation);

}  // namespace qccl
