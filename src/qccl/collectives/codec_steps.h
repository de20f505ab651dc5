// Encoding a vector into a slot layout and decoding it back: the first and
// last step of every collective that runs a Reduction.
#pragma once

#include <span>

#include "qccl/collectives/layout.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Encodes every slot of `layout` from `input` into `work` and records its
// size. Identity-layout reductions need no encoding: their slots are marked
// full (the caller has placed the fp32 data in `work`). Empty slots hold 0 bytes.
void encode_slots(Reduction& reduction, SlotLayout& layout, std::span<const float> input,
                  std::span<std::byte> work);

// Decodes the slots [first_slot, first_slot + count) of `work` into `output`,
// where output[0] is element `output_first` of the whole vector. Skipped for
// identity layouts, whose work buffer is the output already.
void decode_slots(Reduction& reduction, SlotLayout& layout, std::span<const std::byte> work,
                  std::size_t first_slot, std::size_t count, std::span<float> output,
                  std::size_t output_first);

// Reduces `incoming` into `slot` (an empty slot stays empty) and checks the
// result fits the slot; `operation` names the collective in errors.
void reduce_into_slot(Reduction& reduction, Slot& slot, std::span<const std::byte> incoming,
                      std::span<std::byte> work, const ReduceContext& context,
                      std::string_view operation);

}  // namespace qccl
