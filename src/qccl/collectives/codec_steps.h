// Encoding a vector into a slot layout and decoding it back: the first and
// last step of every collective that moves an Encoding.
#pragma once

#include <span>

#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Slots [first, first + count) of a layout.
struct SlotRange {
  std::size_t first = 0;
  std::size_t count = 0;
};
inline SlotRange all_slots(const SlotLayout& layout) { return {0, layout.slot_count()}; }
inline SlotRange segment_slots(const SlotLayout& layout, std::size_t segment) {
  return {segment * layout.chunks_per_segment(), layout.chunks_per_segment()};
}

// Encodes the slots in `slots` from `input` — input[0] being element
// `input_first` of the slots' element space — into `work`, and records their
// sizes. Identity-layout reductions need no encoding: their slots are marked
// full (the caller has placed the fp32 data in `work`). Empty slots hold 0
// bytes. With a non-empty `own` (indexed like `input`), each slot's own
// encoding is also decoded into it (Encoding::decode_contribution), before
// any reduction changes it.
void encode_slots(Encoding& encoding, SlotLayout& layout, SlotRange slots,
                  std::span<const float> input, std::size_t input_first, std::span<std::byte> work,
                  std::span<float> own = {});

// Decodes the slots in `slots` of `work` into `output`, where output[0] is
// element `output_first` of the slots' element space. Skipped for identity
// layouts, whose work buffer is the output already.
void decode_slots(Encoding& encoding, SlotLayout& layout, std::span<const std::byte> work,
                  SlotRange slots, std::span<float> output, std::size_t output_first);

// Reduces `incoming` into `slot` (an empty slot stays empty) and checks the
// result fits the slot; `operation` names the collective in errors. The
// reduction's time is added to phases->reduce (when not null).
void reduce_into_slot(Reduction& reduction, Slot& slot, std::span<const std::byte> incoming,
                      std::span<std::byte> work, const ReduceContext& context,
                      std::string_view operation, PhaseTimes* phases);

}  // namespace qccl
