#include "qccl/collectives/codec_steps.h"

#include <algorithm>

#include "qccl/common/errors.h"

namespace qccl {

void encode_slots(Encoding& encoding, SlotLayout& layout, SlotRange slots,
                  std::span<const float> input, std::size_t input_first, std::span<std::byte> work,
                  std::span<float> own) {
  const bool identity = encoding.identity_layout();
  if (identity && !own.empty() && own.data() != input.data()) {
    std::copy(input.begin(), input.end(), own.begin());
  }
  for (std::size_t i = slots.first; i < slots.first + slots.count; ++i) {
    Slot& slot = layout.slot(i);
    if (identity || slot.elements.count == 0) {
      slot.size = identity ? slot.capacity : 0;
      continue;
    }
    const std::size_t at = slot.elements.first - input_first;
    slot.size = encoding.encode(input.subspan(at, slot.elements.count), slot.elements.first,
                                 work.subspan(slot.offset, slot.capacity));
    if (slot.size > slot.capacity) {
      throw InvalidArgument("encoding '" + encoding.name() + "' encoded " +
                            std::to_string(slot.elements.count) + " elements into " +
                            std::to_string(slot.size) + " bytes, over its declared bound of " +
                            std::to_string(slot.capacity));
    }
    if (!own.empty()) {
      encoding.decode_contribution(work.subspan(slot.offset, slot.size), slot.elements.first,
                                    own.subspan(at, slot.elements.count));
    }
  }
}

void decode_slots(Encoding& encoding, SlotLayout& layout, std::span<const std::byte> work,
                  SlotRange slots, std::span<float> output, std::size_t output_first) {
  if (encoding.identity_layout()) return;
  for (std::size_t i = slots.first; i < slots.first + slots.count; ++i) {
    const Slot& slot = layout.slot(i);
    if (slot.elements.count == 0) continue;
    encoding.decode(work.subspan(slot.offset, slot.size), slot.elements.first,
                     output.subspan(slot.elements.first - output_first, slot.elements.count));
  }
}

void reduce_into_slot(Reduction& reduction, Slot& slot, std::span<const std::byte> incoming,
                      std::span<std::byte> work, const ReduceContext& context,
                      std::string_view operation, PhaseTimes* phases) {
  if (slot.elements.count == 0) {
    if (!incoming.empty()) {
      throw CommError(std::string(operation) + ": received " + std::to_string(incoming.size()) +
                      " bytes for an empty chunk: the ranks disagree on the data layout");
    }
    return;
  }
  {
    PhaseScope timed(phases, &PhaseTimes::reduce);
    slot.size = reduction.reduce(incoming, work.subspan(slot.offset, slot.capacity), slot.size,
                                 context);
  }
  if (slot.size > slot.capacity) {
    throw CommError(std::string(operation) + ": reduction '" + reduction.name() + "' produced " +
                    std::to_string(slot.size) + " bytes for a chunk with capacity " +
                    std::to_string(slot.capacity));
  }
}

}  // namespace qccl
