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
// (Global-QSGD Definition 1, Eq. 2; QSGD's quantizer): the vectorised kernel,
// or — when levels/norm overflows fp32 for a tiny norm — the same rounding
// after dividing by the norm, with the same random numbers. `scale` is
// levels/norm rounded to fp32.
void encode_levels(std::span<const float> in, std::size_t first, std::int8_t* q, float scale,
                   float norm, int levels, const CounterRng& rng);

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
