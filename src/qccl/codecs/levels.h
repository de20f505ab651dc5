// Pieces shared by the codecs' reductions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "qccl/codecs/codec.h"
#include "qccl/common/counter_rng.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Stochastic rounding of |x|·(levels/norm) to an integer level with x's sign
// (Global-QSGD Definition 1, Eq. 2; QSGD's quantizer), with the same random
// numbers on every path: the vectorised kernel on the scale levels/norm
// rounded to fp32; when that scale overflows fp32 (a tiny norm) the same
// rounding after dividing by the norm in fp32; and when it falls below
// fp32's normal range (a norm beyond about 1e38, such as the 2-norm of
// values near fp32's largest, which may itself exceed fp32) in double.
// A zero norm gives zero levels.
void encode_levels(std::span<const float> in, std::size_t first, std::int8_t* q, double norm,
                   int levels, const CounterRng& rng);
// Whether encode_levels takes the fp32 kernel for the scale levels/norm
// (rounded to fp32), and decode_levels for `step`: the paths an encoding's
// element form (collectives/element_form.h) describes.
bool encode_levels_uses_kernel(float scale);
bool decode_levels_uses_kernel(double step);

// x rounded to fp32, or beyond fp32's range the largest finite fp32 of its
// sign. A decoded value beyond the range is a random rounding up of a value
// within it (every codec's exact result is a mean of fp32 inputs, inside
// the range): the nearest fp32 is never further from the exact result.
float saturate_to_fp32(double x);

// out[i] = q[i]·step, saturated: the fp32 kernel while step is an fp32
// number, else in double (a step beyond fp32's range).
void decode_levels(const std::int8_t* q, float* out, std::size_t n, double step);
// decode_levels of packed 4-bit levels (kernels::unpack_i4), unpacked on the fly.
void decode_levels_i4(const std::uint8_t* packed, float* out, std::size_t n, double step);

// encode_levels of 4-bit levels (|level| <= 7), packed (kernels::pack_i4)
// one cache-sized block at a time: the unpacked levels never reach memory.
void encode_levels_i4(std::span<const float> in, std::size_t first, std::uint8_t* packed,
                      double norm, int levels, const CounterRng& rng);

// The generator for a stochastic reduction: the owner rank's reduce stream
// at this step, with the hop in the key (the kernels' 32-bit counter is the
// element index), so every hop rounds independently and exactly once.
CounterRng reduce_rng(const CodecSettings& settings, std::uint64_t step, const ReduceContext& context);

// Throws CommError naming `codec` and the chunk's elements: a partial sum
// broke `bound` (e.g. "exceeds n·s = 124"), which only a corrupt message can do.
[[noreturn]] void throw_corrupt_partial_sum(std::string_view codec, const ReduceContext& context,
                                            std::string_view bound);

// Throws CommError naming `codec` unless a chunk of `count` elements arrived
// with exactly `expected` bytes.
void require_chunk_bytes(std::string_view codec, std::size_t got, std::size_t expected,
                         std::size_t count);

}  // namespace qccl
