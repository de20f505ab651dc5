// Exponential dithering E_s of Global-QSGD (§4.2) and its exponential reduce
// function (§4.3, Algorithm 2), as pure functions on one-byte codes.
//
// Code: bit 7 is the sign, bits 0-6 the exponent e; the value is
// sign * 2^-e, and e = 0 encodes zero. Values are pre-scaled by 2^-c
// ("divide by 2n", generalised to an exact power of two), so a rank's
// quantized value 2^-j (level j = 0..s-1 of y = |x|/norm in [0,1]) travels as
// e = j + c.
//
// Headroom (why no partial sum ever needs e <= 0, i.e. reaches magnitude 1):
// the reduce returns sign*2^-e1 or sign*2^-(e1-1) for operands of the same
// sign, where 2^-e1 is the larger operand, and at most 2^-e1 otherwise; so
// |C(a+b)| <= 2 max(|a|,|b|). Every rank's value is at most 2^-c.
// - Halving-doubling (pairwise rounds, fold included): after r rounds of combining two
//   partial sums each at most B, the result is at most 2B, so the final sum is
//   at most 2^rounds * 2^-c with rounds = ceil(log2 n); c = 1 + ceil(log2 n)
//   keeps every partial sum <= 1/2 (e >= 1).
// - Ring: the accumulator absorbs one rank's value per hop and may double at
//   each of the n-1 hops: it is at most 2^(n-1) * 2^-c; c = n keeps it <= 1/2.
//   (The paper's 2n pre-scaling protects a balanced power-of-two tree only.)
//   The reduce draws 32 random bits, so it never rounds up across an
//   exponent gap of 32 or more: the accumulator stays within 2^32 of the
//   largest input, and c = min(n, 33) suffices for any rank count.
// Levels then fill the rest of the 7-bit exponent: s = 128 - c >= 95, so the
// deepest level's code is e = s - 1 + c = 127. A reduce result with e < 1
// can only come from corrupt input and is reported, never wrapped.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace qccl::exp_dither {

constexpr int kMaxExponent = 127;
constexpr std::uint8_t kSignBit = 0x80;

constexpr int ceil_log2(int x) {
  int bits = 0;
  while ((1 << bits) < x) ++bits;
  return bits;
}

// Reductions on one element's path: n-1 hops on the ring, ceil(log2 n)
// rounds on halving-doubling (the fold counts as one).
constexpr int reductions_on_path(int ranks, bool ring) {
  return ring ? ranks - 1 : ceil_log2(ranks);
}

// Pre-scaling exponent c for `ranks` ranks under ring or halving-doubling (see above).
constexpr int headroom(int ranks, bool ring) {
  if (ranks <= 1) return 1;
  return ring ? (ranks < 33 ? ranks : 33) : 1 + ceil_log2(ranks);
}

// Levels per value: s = 128 - c.
constexpr int levels(int c) { return kMaxExponent + 1 - c; }

constexpr int exponent(std::uint8_t code) { return code & 0x7F; }
constexpr bool negative(std::uint8_t code) { return (code & kSignBit) != 0; }

// Quantizes y = |x|/norm in [0, 1] (given as fp32) to a code, unbiased:
// for y in [2^E, 2^(E+1)) with mantissa fraction f, rounds up to 2^(E+1)
// with probability f by comparing 23 random bits with the mantissa bits;
// below the smallest level 2^-(s-1), rounds to it or to zero with
// probability y * 2^(s-1). `random23` is uniform in [0, 2^23).
inline std::uint8_t quantize(float y, bool sign, int c, int s, std::uint32_t random23) {
  if (!(y > 0.0f)) return 0;
  const int deepest = s - 1;  // level j = s-1 is the smallest non-zero value
  std::uint32_t bits;
  std::memcpy(&bits, &y, 4);
  const int biased = static_cast<int>(bits >> 23);       // 0 for denormals
  const int e_floor = biased - 127;                      // y in [2^e_floor, 2^(e_floor+1))
  int j;
  if (biased != 0 && -e_floor <= deepest) {
    const std::uint32_t mantissa = bits & 0x7FFFFF;
    const bool up = random23 < mantissa;
    j = -e_floor - (up ? 1 : 0);  // level 2^-j; y = 1 has mantissa 0: j = 0
    if (j < 0) j = 0;
  } else {
    // Below the smallest level: 0 or 2^-deepest, up with probability
    // y·2^deepest (< 1), compared in 23-bit units. Two fp32 scalings by
    // powers of two, each exact and in range (the vectorised kernel
    // computes the same).
    const float p23 = y * std::ldexp(1.0f, deepest) * 8388608.0f;
    if (!(static_cast<float>(random23) < p23)) return 0;
    j = deepest;
  }
  const int e = j + c;
  return static_cast<std::uint8_t>((sign ? kSignBit : 0) | e);
}

// C_nat(a + b) of Algorithm 2: the sum rounded stochastically to a power of
// two (or zero), unbiased. With 2^-e1 the larger operand and d = e2 - e1:
// same signs: 2^-(e1-1) w.p. 2^-d, else 2^-e1 (exact when d = 0);
// opposite signs: zero if d = 0, else 2^-(e1+1) w.p. 2^-(d-1), else 2^-e1.
// `random` is 32 uniform bits, so probabilities are exact to 2^-32 (an
// up-rounding less likely than that never happens; see the headroom).
// Returns false if the result would need e < 1 (impossible with the
// headroom above; the caller reports corrupt input). kernels::exp_reduce is
// the vectorised form, bit for bit.
inline bool reduce(std::uint8_t a, std::uint8_t b, std::uint32_t random, std::uint8_t& out) {
  int ea = exponent(a), eb = exponent(b);
  if (ea == 0) {
    out = b;
    return true;
  }
  if (eb == 0) {
    out = a;
    return true;
  }
  if (ea > eb) {
    std::swap(a, b);
    std::swap(ea, eb);
  }
  const int d = eb - ea;
  // Pr(random < 2^(32-k)) = 2^-k for 0 < k < 32; certain for k = 0.
  auto happens = [&](int k) { return k == 0 || (k < 32 && random < (std::uint32_t{1} << (32 - k))); };
  int e;
  if (negative(a) == negative(b)) {
    e = happens(d) ? ea - 1 : ea;
  } else {
    if (d == 0) {
      out = 0;
      return true;
    }
    e = happens(d - 1) ? ea + 1 : ea;
  }
  if (e < 1 || e > kMaxExponent) return false;
  out = static_cast<std::uint8_t>((a & kSignBit) | e);
  return true;
}

// The value of a code times 2^c: what the ranks' pre-scaled sum represents.
inline double value(std::uint8_t code, int c) {
  const int e = exponent(code);
  if (e == 0) return 0.0;
  const double v = std::ldexp(1.0, c - e);
  return negative(code) ? -v : v;
}

}  // namespace qccl::exp_dither
