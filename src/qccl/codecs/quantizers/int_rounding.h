// Integer rounding Int(·) of IntSGD (IntSGD §2) and the wire types its
// integers travel in.
//
// Int(t) = ⌊t⌋ + 1 with probability t − ⌊t⌋, else ⌊t⌋: unbiased, with
// variance (t − ⌊t⌋)(1 − t + ⌊t⌋) <= 1/4 (Lemma 1). The deterministic
// variant rounds to nearest, ties to even (what torch.round does, §5.1). The
// scaled value α·x is clipped to ±c with c = ⌊(2^(b−1) − 1)/n⌋, so that the
// sum over n ranks — and every partial sum along a ring or halving-doubling — fits a
// signed b-bit integer and can never overflow (§5.1: "we clip the local
// stochastic gradients to ensure that each aggregated value fits").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "qccl/common/counter_rng.h"

namespace qccl {

enum class IntRounding { random, deterministic };
// int64 is not in the paper: it lets experiments watch integers grow far
// beyond what int32 holds (IntGD, Appendix A.2) without clipping them.
enum class IntWire { int8, int32, int64 };

std::string_view to_string(IntRounding rounding);
std::string_view to_string(IntWire wire);
int wire_bits(IntWire wire);
std::size_t wire_bytes_per_element(IntWire wire);

// c = ⌊(2^(b−1) − 1)/n⌋, lowered if needed to an integer that double holds
// exactly (so comparing in double clips exactly). Throws InvalidArgument when
// c < 1, i.e. more than 2^(b−1) − 1 ranks, naming the wider wire to use.
std::int64_t per_rank_clip(IntWire wire, int ranks);

// out[i] = clip(Int(alpha · x[i]), ±clip) for the elements whose global
// indices are first + i; the random draws are keyed by that index. alpha may
// be +inf (a zero denominator with ε = 0): every non-zero element clips, a
// zero stays zero. Returns how many elements were clipped. `Out` is int8_t,
// int32_t or int64_t; `In` float or double.
template <class In, class Out>
std::uint64_t round_scaled(std::span<const In> x, double alpha, IntRounding rounding,
                           std::int64_t clip, const CounterRng& rng, std::size_t first, Out* out);

}  // namespace qccl
