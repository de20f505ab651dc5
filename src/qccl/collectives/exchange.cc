#include "qccl/collectives/exchange.h"

#include <algorithm>
#include <vector>

#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/receive_window.h"
#include "qccl/common/errors.h"

namespace qccl {

void exchange_slots(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
                    const SlotTransfer& outgoing, const SlotTransfer& incoming,
                    Reduction* reduction, int hop, const CollectiveOptions& options,
                    Timeout timeout, std::string_view operation) {
  Transport& transport = comm.transport();
  std::vector<RequestPtr> sends;
  if (outgoing.peer >= 0) {
    sends.reserve(outgoing.slot_count);
    for (std::size_t i = 0; i < outgoing.slot_count; ++i) {
      const Slot& slot = layout.slot(outgoing.first_slot + i);
      sends.push_back(transport.isend(outgoing.peer, tag, work.subspan(slot.offset, slot.size)));
    }
  }
  if (incoming.peer >= 0 && incoming.slot_count > 0) {
    const std::size_t count = incoming.slot_count;
    // Stored chunks go straight to their slot, so all receives can be in
    // flight; reduced chunks share `window` staging buffers.
    const std::size_t window = reduction ? receive_window(options, layout) : count;
    const std::size_t stride = layout.max_slot_capacity();
    std::span<std::byte> staging;
    if (reduction) staging = comm.scratch(Scratch::staging, std::min(window, count) * stride);
    std::vector<RequestPtr> recvs(count);
    auto post = [&](std::size_t i) {
      const Slot& slot = layout.slot(incoming.first_slot + i);
      auto buffer = reduction ? staging.subspan((i % window) * stride, slot.capacity)
                              : work.subspan(slot.offset, slot.capacity);
      recvs[i] = transport.irecv(incoming.peer, tag, buffer);
    };
    std::size_t posted = 0;
    for (; posted < std::min(window, count); ++posted) post(posted);
    for (std::size_t i = 0; i < count; ++i) {
      comm.wait(*recvs[i], timeout, operation);
      const std::size_t received = recvs[i]->bytes();
      Slot& slot = layout.slot(incoming.first_slot + i);
      if (layout.exact_sizes() && received != slot.capacity) {
        throw CommError(std::string(operation) + ": rank " + std::to_string(comm.rank()) +
                        " received " + std::to_string(received) + " bytes from rank " +
                        std::to_string(incoming.peer) + " for a chunk of " +
                        std::to_string(slot.capacity) +
                        " bytes: the ranks disagree on the data layout");
      }
      if (reduction) {
        const ReduceContext context{slot.elements.first, slot.elements.count, comm.rank(), hop};
        reduce_into_slot(*reduction, slot, staging.subspan((i % window) * stride, received), work,
                         context, operation, options.phases);
      } else {
        slot.size = received;
      }
      recvs[i].reset();
      if (posted < count) post(posted++);
    }
  }
  for (auto& s : sends) comm.wait(*s, timeout, operation);
}

}  // namespace qccl
