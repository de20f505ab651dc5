// An encoding of fp32 chunks: what every collective that moves encoded data
// needs, whether or not the encoded chunks can be combined in transit.
//
// Contract (every implementation, fp32 and the codecs alike):
// - A vector of fp32 elements is cut into chunks whose boundaries are
//   multiples of granularity() (packed sub-byte values and quantization
//   buckets are never split); the last chunk may be shorter.
// - encode() turns the elements [first, first + in.size()) into at most
//   max_encoded_bytes(in.size()) bytes and returns how many it wrote.
// - decode() turns an encoded chunk (one rank's encoding, or a partial or
//   final sum where a Reduction combined several) into fp32. It must reject
//   a malformed or truncated chunk with a CommError, never read or write out
//   of bounds.
// - decode_add() adds what decode() gives to `out`, one fp32 addition per
//   element: the same bits as decoding into `scratch` and adding it, which
//   is what it does unless the encoding fuses the two.
// - decode_contribution() turns one rank's own encoding of a chunk — what
//   encode() produced, before any combining — into the values it stands for
//   in the input's units, Q(x): what this rank contributed. Error feedback
//   keeps x − Q(x) without knowing the codec.
// - Empty chunks (count 0, which happen when there are fewer units than
//   pieces) are never passed to encode or decode: they travel as 0-byte
//   messages.
// - One instance serves one collective at a time; it may hold per-step state
//   (scales, generators, counters).
//
// Encodings whose chunks can be combined hop by hop without decoding are
// Reductions (reduction.h); in_transit() finds that capability without a
// type switch. The others (QSGD's per-rank scales, sign bits, sparse pairs)
// travel as they are to the ranks that need them, which decode and add
// (decode_sum.h, allgather.h). A device (GPU) implementation of a scheme is
// a second implementation of the same interface, with the same bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "qccl/collectives/element_form.h"
#include "qccl/common/export.h"
#include "qccl/transport/transport.h"

QCCL_API_BEGIN
namespace qccl {

class Reduction;

// What the transport itself can do instead (MPI_Allreduce for the baseline).
struct NativeReduction {
  DataType type;
  ReduceOp op;
};

class Encoding {
 public:
  virtual ~Encoding() = default;

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
  // The transport element (and, for a Reduction, operation) equivalent to
  // this encoding, if any (algorithm native).
  virtual std::optional<NativeReduction> native_equivalent() const { return std::nullopt; }

  virtual std::size_t encode(std::span<const float> in, std::size_t first,
                             std::span<std::byte> out) = 0;
  virtual void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) = 0;
  // out[i] += (the decoding of `in`)[i], in fp32; `scratch` holds at least
  // out.size() floats for encodings that decode first and add after.
  virtual void decode_add(std::span<const std::byte> in, std::size_t first, std::span<float> out,
                          std::span<float> scratch);
  // This rank's own encoding of elements [first, first + out.size()) — as
  // encode() returned it — decoded into the values it stands for, Q(x).
  virtual void decode_contribution(std::span<const std::byte> in, std::size_t first,
                                   std::span<float> out) = 0;

  // The in-transit combining of this encoding's chunks: itself for a
  // Reduction, null for an encoding that is only gathered and decoded.
  virtual Reduction* in_transit() { return nullptr; }
  // This step's arithmetic as element-wise functions and their scalars,
  // where the encoding is element-wise and its fast path applies (not for
  // norms beyond fp32's range, which take a double path); nullopt otherwise.
  virtual std::optional<ElementForm> element_form() const { return std::nullopt; }
};

}  // namespace qccl
QCCL_API_END
