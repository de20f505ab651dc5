// Pairwise exchange of slots with one peer: the building block of
// halving-doubling's fold, halving, doubling and unfold steps.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

struct SlotTransfer {
  int peer = -1;                       // -1: nothing to do in this direction
  std::size_t first_slot = 0;          // contiguous slot indices [first, first+count)
  std::size_t slot_count = 0;
};

// Sends the slots of `outgoing` to outgoing.peer and receives the slots of
// `incoming` from incoming.peer, all on `tag`. With a reduction, received
// chunks are reduced into their slot through staging buffers (at most
// `options.window` receives in flight), as reduction number `hop`; without
// one they are stored in place. Returns once everything has completed.
void exchange_slots(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
                    const SlotTransfer& outgoing, const SlotTransfer& incoming,
                    Reduction* reduction, int hop, const CollectiveOptions& options,
                    Timeout timeout, std::string_view operation);

}  // namespace qccl
