// The schedule a call's algorithm gives its data movement: ring or
// halving-doubling, for a whole allreduce or one of its two halves, over a
// slot layout held in a work buffer. Every body that runs a Reduction (or
// gathers encodings) goes through here, so the choice is made in one place.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

class CodecQueue;

enum class SchedulePhases {
  // Every rank ends with every segment reduced (`layout`: n segments for the
  // ring, halving_doubling_blocks(n) for halving-doubling).
  allreduce,
  // `layout` holds n segments; rank r ends owning segment r reduced.
  reduce_scatter,
  // `layout` holds n segments; rank r starts with segment r and ends with all.
  allgather,
};

// Runs `phases` with options.algorithm's schedule (ring or halving-doubling;
// native has none and is refused). `reduction` may be null for allgather.
// Errors name the operation as "<algorithm> <what>", e.g. "ring allreduce".
// `codec` (ring only, see overlaps_codec) encodes and decodes the slots while
// the transfers run; without it `work` must hold the encoded slots.
void run_schedule(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
                  Reduction* reduction, SchedulePhases phases, const CollectiveOptions& options,
                  Timeout timeout, std::string_view what, CodecQueue* codec = nullptr);

// True when the schedule interleaves `encoding`'s encoding and decoding with
// its transfers (a CodecQueue): the ring, for encodings that are not fp32 itself.
bool overlaps_codec(const Encoding& encoding, const CollectiveOptions& options);

}  // namespace qccl
