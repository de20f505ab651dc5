// The element-wise arithmetic of an Encoding, as data: which per-element
// functions (codecs/kernels/element_ops.h) encode, combine in transit and
// decode its chunks, with which scalars and generator keys. An encoding
// that is element-wise offers one (Encoding::element_form()); a backend
// that cannot call the encoding's own code — CUDA kernels on device memory
// — runs those functions from this description alone and gets the
// encoding's bytes (codecs/element_form_reference.h is the host version,
// tested against the encodings themselves).
#pragma once

#include <cstddef>
#include <cstdint>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct ElementForm {
  enum class Code {
    linear_i8_summed,    // Global-QSGD L_s summed in transit (§4.2): int8 levels
    linear_i8_averaged,  // L_s averaged inside each step (§8): [uint32 k][int8 levels]
    linear_i4_averaged,  // the same with packed 4-bit levels: [uint32 k][nibbles]
    exp_i8,              // Global-QSGD E_s (§4.2), C_nat in transit (Algorithm 2): one-byte codes
    fp16,                // fp16 of x/n summed in fp16
  };
  Code code = Code::fp16;
  // Bytes before a chunk's elements: the averaging chunks' count of ranks
  // averaged (a uint32); 0 otherwise.
  std::size_t header_bytes = 0;

  // Encoding. linear: levels/norm and the levels; exp: the norm (fp32),
  // the headroom c and the levels s; fp16: the factor 1/n.
  float scale = 0;
  std::int32_t levels = 0;
  std::int32_t headroom = 0;
  std::uint32_t key_low = 0, key_high = 0;  // the quantize stream's key halves

  // Decoding: one unit of the complete mean, and of one rank's own
  // encoding (fp16: factors of the decoded values, 1 and n).
  float mean_step = 0, own_step = 0;

  // Combining: the bound of a summed level (n·s), and how many ranks the
  // final averaged chunk must average; the reduce stream's coordinates
  // (levels.h: reduce_rng).
  std::int32_t limit = 0;
  std::int32_t ranks = 0;
  std::uint64_t seed = 0, bucket = 0, step = 0;
};

}  // namespace qccl
QCCL_API_END
