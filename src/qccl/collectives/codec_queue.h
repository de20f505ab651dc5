// Encoding and decoding interleaved with a ring's transfers.
//
// A compressed collective that encodes its whole input before the first send
// and decodes the whole result after the last receive leaves the links idle
// for both (for Global-QSGD at 64 MiB, about 10 ms per rank on one core, 5% of
// the time 4 ranks need at 1 Gbit/s). A CodecQueue instead lets the ring
// encode each slot just before its first use, in the order the ring needs
// them, and decode each slot once it holds its final bytes. Whenever the ring
// would wait for a transfer it does one piece of this work and tests the
// transfer again, so the transport keeps progressing between pieces.
//
// Each slot is encoded and decoded by the same calls, over the same element
// ranges, as encode_slots and decode_slots make; encodings depend only on the
// slot's elements and position, so the result is bitwise the one of encoding
// everything first and decoding everything last.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/encoding.h"

namespace qccl {

class CodecQueue {
 public:
  // Where encodes read: input[0] is element `first` of the slots' element
  // space; `own` (indexed like input, may be empty) receives each slot's own
  // contribution (see encode_slots).
  struct Source {
    std::span<const float> input;
    std::size_t first = 0;
    std::span<float> own;
  };
  // Where decodes write: output[0] is element `first`.
  struct Target {
    std::span<float> output;
    std::size_t first = 0;
  };

  // `encoding` must not have the identity layout (that needs no coding).
  // Encode and decode times are added to `phases` if it is not null.
  CodecQueue(Encoding& encoding, SlotLayout& layout, std::span<std::byte> work, Source source,
             Target target, PhaseTimes* phases);

  // The slots to encode, in the order they will first be needed.
  void plan_encodes(std::vector<std::size_t> order);
  // Encodes every planned slot up to `slot` in that order that is not yet
  // encoded. A slot that is not planned is taken to be filled otherwise.
  void require_encoded(std::size_t slot);
  // `slot` holds its final bytes: it is decoded later (after its encode).
  void finished(std::size_t slot);
  // Does one pending piece of work, the next encode before the next decode;
  // false when nothing is pending.
  bool step();
  // Does every pending piece of work.
  void drain();

 private:
  void encode_next();
  void decode(std::size_t slot);

  static constexpr std::size_t kNotPlanned = static_cast<std::size_t>(-1);

  Encoding& encoding_;
  SlotLayout& layout_;
  std::span<std::byte> work_;
  Source source_;
  Target target_;
  PhaseTimes* phases_;
  std::vector<std::size_t> order_;     // slots in encode order
  std::vector<std::size_t> position_;  // slot -> its index in order_, or kNotPlanned
  std::size_t encoded_ = 0;            // order_[0, encoded_) are encoded
  std::vector<std::size_t> to_decode_;
  std::size_t decoded_ = 0;            // to_decode_[0, decoded_) are decoded
};

}  // namespace qccl
