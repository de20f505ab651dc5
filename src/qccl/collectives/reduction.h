// The reduction a collective applies, expressed on *encoded chunks* so that
// compressed collectives reduce without decoding between hops: an Encoding
// (encoding.h, whose contract holds here too) whose chunks can also be
// combined in transit.
//
// Contract, besides the Encoding's:
// - reduce() combines an incoming encoded chunk into an accumulated one of
//   the same element range, in place; the result may have another byte size,
//   never more than max_encoded_bytes(count). It must reject a malformed or
//   truncated chunk with a CommError, never read or write out of bounds.
//   It is never passed empty chunks.
// - decode() turns a partial or the final sum into fp32;
//   decode_contribution() only ever sees a rank's own encoding, before any
//   reduce().
// - Collectives call reduce() for each chunk exactly once per hop, on the rank
//   that owns the chunk at that hop, and forward the resulting bytes; so a
//   stochastic reduction runs once and every rank decodes identical bytes.
//   ReduceContext tells a randomized reduction where it is (for its
//   counter-based generator) without any global state.
#pragma once

#include <cstddef>
#include <span>

#include "qccl/collectives/encoding.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct ReduceContext {
  std::size_t first = 0;  // index of the chunk's first element in the whole vector
  std::size_t count = 0;  // elements in the chunk
  int rank = 0;           // the rank performing this reduction
  int hop = 0;            // how many reductions this chunk went through before this one
};

class Reduction : public Encoding {
 public:
  // accum[0, accum_bytes) ⊕= incoming; accum.size() is the capacity. Returns
  // the new byte size of the accumulated chunk.
  virtual std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                             std::size_t accum_bytes, const ReduceContext& context) = 0;

  Reduction* in_transit() final { return this; }
};

}  // namespace qccl
QCCL_API_END
