#include "qccl/collectives/codec_steps.h"

#include "qccl/common/errors.h"

namespace qccl {

void encode_slots(Reduction& reduction, SlotLayout& layout, std::span<const float> input,
                  std::span<std::byte> work) {
  const bool identity = reduction.identity_layout();
  for (std::size_t i = 0; i < layout.slot_count(); ++i) {
    Slot& slot = layout.slot(i);
    if (identity || slot.elements.count == 0) {
      slot.size = identity ? slot.capacity : 0;
      continue;
    }
    slot.size = reduction.encode(input.subspan(slot.elements.first, slot.elements.count),
                                 slot.elements.first, work.subspan(slot.offset, slot.capacity));
    if (slot.size > slot.capacity) {
      throw InvalidArgument("reduction '" + reduction.name() + "' encoded " +
                            std::to_string(slot.elements.count) + " elements into " +
                            std::to_string(slot.size) + " bytes, over its declared bound of " +
                            std::to_string(slot.capacity));
    }
  }
}

void decode_slots(Reduction& reduction, SlotLayout& layout, std::span<const std::byte> work,
                  std::size_t first_slot, std::size_t count, std::span<float> output,
                  std::size_t output_first) {
  if (reduction.identity_layout()) return;
  for (std::size_t i = first_slot; i < first_slot + count; ++i) {
    const Slot& slot = layout.slot(i);
    if (slot.elements.count == 0) continue;
    reduction.decode(work.subspan(slot.offset, slot.size), slot.elements.first,
                     output.subspan(slot.elements.first - output_first, slot.elements.count));
  }
}

void reduce_into_slot(Reduction& reduction, Slot& slot, std::span<const std::byte> incoming,
                      std::span<std::byte> work, const ReduceContext& context,
                      std::string_view operation) {
  if (slot.elements.count == 0) {
    if (!incoming.empty()) {
      throw CommError(std::string(operation) + ": received " + std::to_string(incoming.size()) +
                      " bytes for an empty chunk: the ranks disagree on the data layout");
    }
    return;
  }
  slot.size = reduction.reduce(incoming, work.subspan(slot.offset, slot.capacity), slot.size,
                               context);
  if (slot.size > slot.capacity) {
    throw CommError(std::string(operation) + ": reduction '" + reduction.name() + "' produced " +
                    std::to_string(slot.size) + " bytes for a chunk with capacity " +
                    std::to_string(slot.capacity));
  }
}

}  // namespace qccl
