// Tree allreduce for any rank count.
#pragma once

#include <span>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Number of blocks the halving-doubling allreduce splits the vector into: the largest
// power of two not above the rank count.
std::size_t halving_doubling_blocks(int ranks);

// Runs the halving-doubling allreduce over `layout` (halving_doubling_blocks(n) segments, K chunks
// each) held in `work`; on return every rank holds the reduced encoding.
void run_halving_doubling(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
              Reduction& reduction, const CollectiveOptions& options, Timeout timeout);

}  // namespace qccl
