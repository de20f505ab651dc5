// The reduction a collective applies, expressed on *encoded chunks* so that
// compressed collectives reduce without decoding between hops.
//
// Contract (every implementation, fp32 sum and the codecs alike):
// - A vector of fp32 elements is cut into chunks whose boundaries are
//   multiples of granularity() (packed sub-byte values and quantization
//   buckets are never split); the last chunk may be shorter.
// - encode() turns the elements [first, first + in.size()) into at most
//   max_encoded_bytes(in.size()) bytes and returns how many it wrote.
// - reduce() combines an incoming encoded chunk into an accumulated one of
//   the same element range, in place; the result may have another byte size,
//   never more than max_encoded_bytes(count). It must reject a malformed or
//   truncated chunk with a CommError, never read or write out of bounds.
// - decode() turns an encoded chunk (a partial or the final sum) into fp32.
// - decode_add() adds what decode() gives to `out`, one fp32 addition per
//   element: the same bits as decoding into `scratch` and adding it, which
//   is what it does unless the reduction fuses the two.
// - decode_contribution() turns one rank's own encoding of a chunk — what
//   encode() produced, before any reduce() — into the values it stands for
//   in the input's units, Q(x): what this rank contributed. Error feedback
//   keeps x − Q(x) without knowing the codec.
// - Empty chunks (count 0, which happen when there are fewer units than
//   pieces) are never passed to encode, reduce or decode: they travel as
//   0-byte messages.
// - Collectives call reduce() for each chunk exactly once per hop, on the rank
//   that owns the chunk at that hop, and forward the resulting bytes; so a
//   stochastic reduction runs once and every rank decodes identical bytes.
//   ReduceContext tells a randomized reduction where it is (for its
//   counter-based generator) without any global state.
// - One instance serves one collective at a time; it may hold per-tensor state.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "qccl/common/export.h"
#include "qccl/transport/transport.h"

QCCL_API_BEGIN
namespace qccl {

struct ReduceContext {
  std::size_t first = 0;  // index of the chunk's first element in the whole vector
  std::size_t count = 0;  // elements in the chunk
  int rank = 0;           // the rank performing this reduction
  int hop = 0;            // how many reductions this chunk went through before this one
};

// What the transport itself can do instead (MPI_Allreduce for the baseline).
struct NativeReduction {
  DataType type;
  ReduceOp op;
};

class Reduction {
 public:
  virtual ~Reduction() = default;

  // Stable name, e.g. "fp32-sum"; compared across ranks by the call check.
  virtual std::string name() const = 0;
  // Elements per indivisible unit of the encoding.
  virtual std::size_t granularity() const { return 1; }
  // Upper bound of an encoded chunk of `count` elements, partial sums included.
  virtual std::size_t max_encoded_bytes(std::size_t count) const = 0;
  // True when the encoding of elements [first, first+count) is exactly the
  // fp32 bytes of those elements: collectives then run on the caller's buffer
  // with no encode, decode or staging copy.
  virtual bool identity_layout() const { return false; }
  // The transport reduction equivalent to this one, if any (algorithm native).
  virtual std::optional<NativeReduction> native_equivalent() const { return std::nullopt; }

  virtual std::size_t encode(std::span<const float> in, std::size_t first,
                             std::span<std::byte> out) = 0;
  virtual void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) = 0;
  // out[i] += (the decoding of `in`)[i], in fp32; `scratch` holds at least
  // out.size() floats for reductions that decode first and add after.
  virtual void decode_add(std::span<const std::byte> in, std::size_t first, std::span<float> out,
                          std::span<float> scratch);
  // This rank's own encoding of elements [first, first + out.size()) — as
  // encode() returned it — decoded into the values it stands for, Q(x).
  virtual void decode_contribution(std::span<const std::byte> in, std::size_t first,
                                   std::span<float> out) = 0;
  // accum[0, accum_bytes) ⊕= incoming; accum.size() is the capacity. Returns
  // the new byte size of the accumulated chunk.
  virtual std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                             std::size_t accum_bytes, const ReduceContext& context) = 0;
};

}  // namespace qccl
QCCL_API_END
