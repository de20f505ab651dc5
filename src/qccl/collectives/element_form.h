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

// IntSGD's scales (IntSGD Algorithm 2: one α per tensor): the block of
// elements from `first` to the next block's first is rounded at `alpha` and
// its summed integers decode with `mean_step` = 1/(n·α); the int8 and int32
// wires use both rounded to fp32, as the host's fast path does (fast_alpha,
// fast_mean_step), the int64 wire's exact path as they are. One rank's
// integers stand for q·`own_step` (1/α).
struct IntegerBlock {
  std::size_t first = 0;
  double alpha = 0, mean_step = 0, own_step = 0;
  float fast_alpha() const { return static_cast<float>(alpha); }
  float fast_mean_step() const { return static_cast<float>(mean_step); }
};

struct ElementForm {
  enum class Code {
    linear_i8_summed,    // Global-QSGD L_s summed in transit (§4.2): int8 levels
    linear_i8_averaged,  // L_s averaged inside each step (§8): [uint32 k][int8 levels]
    linear_i4_averaged,  // the same with packed 4-bit levels: [uint32 k][nibbles]
    exp_i8,              // Global-QSGD E_s (§4.2), C_nat in transit (Algorithm 2): one-byte codes
    fp16,                // fp16 of x/n summed in fp16
    fp32_summed,         // fp32 of x·scale summed in fp32 (fp32_mean.h), decoded to the mean
    int_i8_summed,       // IntSGD's integers (Algorithm 1), int8, summed exactly in transit
    int_i32_summed,      // the same in int32
    int_i64_summed,      // the same in int64, rounded and decoded in fp64
    // Min-max buckets (QSDP §4.1, minmax.h), gathered and decoded: not
    // combined in transit. Its codes are bucket records (minmax_records.h).
    minmax_gathered,
  };
  Code code = Code::fp16;
  // Bytes before a chunk's elements: the averaging chunks' count of ranks
  // averaged (a uint32); 0 otherwise.
  std::size_t header_bytes = 0;

  // Encoding. linear: levels/norm and the levels; exp: the norm (fp32),
  // the headroom c and the levels s; fp16: the factor 1/n; fp32: the
  // factor (1, or 2^-k where the sum could overflow). int: `blocks` (at
  // least one, the first at element 0; owned by the encoding, valid while
  // it lives), the per-rank bound c in `clip`, random rounding or to
  // nearest even.
  float scale = 0;
  std::int32_t levels = 0;
  std::int32_t headroom = 0;
  std::uint32_t key_low = 0, key_high = 0;  // the quantize stream's key halves
  const IntegerBlock* blocks = nullptr;
  std::size_t block_count = 0;
  std::int64_t clip = 0;
  bool random_rounding = true;
  // The step's index of a decoded vector's element 0 (a reduce-scatter's
  // output block starts at its block's first): blocks are looked up by the
  // step's index.
  std::size_t vector_first = 0;

  // Min-max: `values_per_range` values per bucket (buckets start at the
  // step's element 0, every values_per_range), level indices 0..`levels`
  // sent in `code_bits` bits each; random rounding, or on the lattice with
  // `lattice_offset`, and decoded on the lattice shifted by `shift` (ρ;
  // 0 off the shifted lattice). `ranks` is how many ranks' records a
  // result holds per element (one encoding per element for an allgather),
  // and their decoded sum is divided by `divide_by` (1: no division).
  std::size_t values_per_range = 0;
  std::int32_t code_bits = 8;
  bool lattice = false;
  double lattice_offset = 0, shift = 0;
  std::int32_t divide_by = 1;

  // Decoding: one unit of the complete mean, and of one rank's own
  // encoding (fp16: factors of the decoded values, 1 and n; fp32: the
  // sum divided by `ranks` when `wide_mean_step` is 0, else the sum times
  // it in fp64, rounded once (a scaled sum: 2^k/n), and own_step 1 or 2^k).
  float mean_step = 0, own_step = 0;
  double wide_mean_step = 0;

  // Combining: the bound of a summed level (n·s; int: n·c), and how many
  // ranks the final averaged chunk must average (fp32: the ranks summed);
  // the reduce stream's coordinates
  // (levels.h: reduce_rng).
  std::int64_t limit = 0;
  std::int32_t ranks = 0;
  std::uint64_t seed = 0, bucket = 0, step = 0;
};

// The layout of a form's codes, for whoever keeps them (a DeviceVector's
// buffers): the bytes of the codes of `count` elements (a chunk without
// its header), the offset of element `first`'s code among a vector's codes
// (`first` even for packed 4-bit codes, a bucket's start for min-max), and
// the bytes of a chunk of `count` elements.
std::size_t form_payload_bytes(const ElementForm& form, std::size_t count);
std::size_t form_payload_offset(const ElementForm& form, std::size_t first);
std::size_t form_chunk_bytes(const ElementForm& form, std::size_t count);

}  // namespace qccl
QCCL_API_END
