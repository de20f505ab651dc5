// The codecs' per-element arithmetic, written once for the CPU and for CUDA
// devices (QCCL_HOST_DEVICE): what one element of an encoding, a decoding or
// an in-transit reduction computes, given the random bits it draws. The
// CPU's vectorised loops (kernels.h) compute exactly these values; the
// device kernels (codecs/device) call these functions, and a host test runs
// them against the CPU kernels byte for byte on every build, so a device
// encoding equals the CPU's for the same seed, step, bucket and element
// (a CPU rank and a GPU rank interoperate) even where no GPU runs the tests.
//
// Floating point here is plain IEEE fp32/fp64 arithmetic, one rounding per
// operation: the device code is compiled without fused multiply-adds
// (nvcc --fmad=false) and with IEEE division, as the host code is compiled
// without contraction (ISO C++ mode), so the two round alike. Comparisons
// and min/max are written as explicit selects, whose NaN behaviour is the
// same on both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qccl/common/counter_rng.h"
#include "qccl/common/host_device.h"

namespace qccl::element_ops {

// ±FLT_MAX, the values decodes saturate at.
inline constexpr float kLargestFloat = 3.40282346638528859811704183484516925e+38f;

// The generator's 32 random bits for element `index` (CounterRng::bits32
// with the key halves; the CPU kernels advance the hash input by φ per
// element, which is the same value).
QCCL_HOST_DEVICE inline std::uint32_t random_bits(std::uint32_t k_low, std::uint32_t k_high,
                                                  std::uint64_t index) {
  return mix32(static_cast<std::uint32_t>(index) * 0x9E3779B9U + k_low) ^ k_high;
}

// The generator's 64 random bits for element `index` (CounterRng::bits64
// of the key whose halves these are).
QCCL_HOST_DEVICE inline std::uint64_t random_bits64(std::uint32_t k_low, std::uint32_t k_high,
                                                    std::uint64_t index) {
  const std::uint64_t key = (static_cast<std::uint64_t>(k_high) << 32) | k_low;
  return mix64(key + index * 0x9E3779B97F4A7C15ULL);
}

// Uniform in [0, 1) from the top 24 of 32 random bits (exact in fp32).
QCCL_HOST_DEVICE inline float uniform24(std::uint32_t random) {
  return static_cast<float>(static_cast<std::int32_t>(random >> 8)) * 0x1p-24f;
}

QCCL_HOST_DEVICE inline std::int32_t smaller(std::int32_t a, std::int32_t b) { return b < a ? b : a; }
QCCL_HOST_DEVICE inline std::int32_t larger(std::int32_t a, std::int32_t b) { return a < b ? b : a; }

// std::min(std::max(v, -FLT_MAX), FLT_MAX), NaN kept (levels.h: saturate_to_fp32 in fp32).
QCCL_HOST_DEVICE inline float saturate(float v) {
  const float low = v < -kLargestFloat ? -kLargestFloat : v;
  return kLargestFloat < low ? kLargestFloat : low;
}

QCCL_HOST_DEVICE inline float magnitude(float v) { return float_from_bits(float_bits(v) & 0x7FFFFFFFU); }
QCCL_HOST_DEVICE inline bool sign_bit(float v) { return (float_bits(v) >> 31) != 0; }

// Linear dithering L_s (Global-QSGD §4.2, Eq. 2): v = |x|·scale, rounded up
// with probability frac(v), clamped to `levels`, with x's sign.
QCCL_HOST_DEVICE inline std::int8_t linear_level(float x, float scale, std::int32_t levels,
                                                 std::uint32_t random) {
  const float v = magnitude(x) * scale;
  const auto lower = static_cast<std::int32_t>(v);  // v >= 0: truncation is floor
  const auto up = static_cast<std::int32_t>(uniform24(random) < v - static_cast<float>(lower));
  const std::int32_t level = smaller(lower + up, levels);
  return static_cast<std::int8_t>(sign_bit(x) ? -level : level);
}

// A level's value q·step, saturated.
QCCL_HOST_DEVICE inline float level_value(std::int32_t q, float step) {
  return saturate(static_cast<float>(q) * step);
}

// Two's-complement nibbles: element 2j in the low nibble of byte j.
QCCL_HOST_DEVICE inline std::int8_t low_nibble(std::uint8_t b) {
  return static_cast<std::int8_t>(static_cast<std::int8_t>(b << 4) >> 4);
}
QCCL_HOST_DEVICE inline std::int8_t high_nibble(std::uint8_t b) {
  return static_cast<std::int8_t>(static_cast<std::int8_t>(b) >> 4);
}
QCCL_HOST_DEVICE inline std::uint8_t nibble_pair(std::int8_t low, std::int8_t high) {
  return static_cast<std::uint8_t>((low & 0xF) | ((high & 0xF) << 4));
}

// An in-transit integer sum: `sum` is acc + in; false when it leaves [-limit, limit].
QCCL_HOST_DEVICE inline bool sum_within(std::int64_t sum, std::int64_t limit) {
  return sum <= limit && sum >= -limit;
}

// One averaging step of linear dithering (Global-QSGD §8): the weighted
// mean (ka·a + kb·b)/k rounded up with probability equal to its fractional
// part. The fp32 floor is exact while |total| <= 127·k and k < 2^24/127.
QCCL_HOST_DEVICE inline std::int8_t averaged_level(std::int8_t a, std::int8_t b, std::int32_t ka,
                                                   std::int32_t kb, float inverse_k,
                                                   std::uint32_t random) {
  const std::int32_t k = ka + kb;
  const std::int32_t total = ka * a + kb * b;
  const float quotient = static_cast<float>(total) / static_cast<float>(k);
  auto q = static_cast<std::int32_t>(quotient);                      // toward zero
  q -= static_cast<std::int32_t>(static_cast<float>(q) > quotient);  // floor
  const std::int32_t remainder = total - q * k;                      // in [0, k)
  const float fraction = static_cast<float>(remainder) * inverse_k;
  return static_cast<std::int8_t>(q + static_cast<std::int32_t>(float_bits(uniform24(random) - fraction) >> 31));
}

// IntSGD's integer rounding (IntSGD §2, int_rounding.h) of one element:
// v = min(|x|·alpha, limit) rounded up with probability frac(v) (random)
// or to nearest with ties to even (deterministic), clamped to `limit`, with
// x's sign; `clipped` when x needed more than `limit`.
struct RoundedInteger {
  std::int32_t level;
  bool clipped;
};
QCCL_HOST_DEVICE inline RoundedInteger rounded_integer(float x, float alpha, std::int32_t limit,
                                                       bool random, std::uint32_t bits) {
  const float limit_f = static_cast<float>(limit);
  const float u = random ? uniform24(bits) : 0.5f;
  const float raw = magnitude(x) * alpha;
  const float v = raw < limit_f ? raw : limit_f;
  const auto lower = static_cast<std::int32_t>(v);
  const float fraction = v - static_cast<float>(lower);
  const auto up = static_cast<std::int32_t>(float_bits(u - fraction) >> 31);
  const std::int32_t tie_up = static_cast<std::int32_t>(!random) &
                              static_cast<std::int32_t>(fraction == 0.5f) & lower;
  const std::int32_t wanted = lower + up + (tie_up & 1);
  const std::int32_t level = smaller(wanted, limit);
  return {sign_bit(x) ? -level : level, raw > limit_f || wanted > limit};
}

// IntSGD's integer rounding in fp64 (IntSGD §2; int_rounding.h's
// round_scaled, which calls it): the int64 wire's, and any wire's where the
// scale is not an fp32 number. y = alpha·value beyond ±limit is clipped;
// else it is rounded up with probability frac(y), drawn from the top 53 of
// 64 random bits (random), or to nearest with ties to even. A zero stays
// zero (also for alpha = +inf). `limit` is an integer below 2^63 that
// double holds exactly, so ⌊y⌋ is taken exactly through int64.
struct WideRoundedInteger {
  std::int64_t level;
  bool clipped;
};
QCCL_HOST_DEVICE inline WideRoundedInteger wide_rounded_integer(double value, double alpha, double limit,
                                                                bool random, std::uint64_t bits) {
  if (value == 0.0) return {0, false};
  const double y = alpha * value;
  if (y > limit) return {static_cast<std::int64_t>(limit), true};
  if (y < -limit) return {-static_cast<std::int64_t>(limit), true};
  const auto truncated = static_cast<std::int64_t>(y);
  const std::int64_t lower = truncated - (y < static_cast<double>(truncated) ? 1 : 0);
  const double fraction = y - static_cast<double>(lower);  // as y − std::floor(y)
  const bool up = random ? static_cast<double>(bits >> 11) * 0x1p-53 < fraction
                         : fraction > 0.5 || (fraction == 0.5 && (lower & 1) != 0);
  return {lower + (up ? 1 : 0), false};
}

// v held within ±FLT_MAX, then rounded to fp32 (levels.h: saturate_to_fp32).
QCCL_HOST_DEVICE inline float saturate_wide(double v) {
  const double low = v < -static_cast<double>(kLargestFloat) ? -static_cast<double>(kLargestFloat) : v;
  return static_cast<float>(static_cast<double>(kLargestFloat) < low ? static_cast<double>(kLargestFloat) : low);
}

// A wide integer's value q·step in fp64, saturated to fp32.
QCCL_HOST_DEVICE inline float wide_level_value(std::int64_t q, double step) {
  return saturate_wide(static_cast<double>(q) * step);
}

// A sum of fp32 values as their mean over `ranks` (fp32_mean.h): the sum
// divided by n in fp32 where it could not overflow (`wide_step` 0), else a
// sum of values scaled by 2^-k times 2^k/n in fp64, rounded once and held
// within fp32's range (SumScaling::mean).
QCCL_HOST_DEVICE inline float fp32_mean_value(float sum, float ranks, double wide_step) {
  if (wide_step == 0) return sum / ranks;
  return saturate_wide(static_cast<double>(sum) * wide_step);
}

// |v| as an unsigned magnitude (2^31 for INT32_MIN, which no valid sum holds).
QCCL_HOST_DEVICE inline std::uint32_t integer_magnitude(std::int32_t v) {
  const auto bits = static_cast<std::uint32_t>(v);
  return v < 0 ? 0U - bits : bits;
}

// Exponential dithering E_s (Global-QSGD §4.2; exp_dither.h's quantize, in
// its branch-free form): the one-byte code of y = |x|/norm, levels 2^-j,
// j < s, pre-scaled by 2^-c. `below_scale` is 2^(s-1).
QCCL_HOST_DEVICE inline std::uint8_t exp_code(float x, float norm, std::int32_t c, std::int32_t s,
                                              float below_scale, std::uint32_t random) {
  const std::int32_t deepest = s - 1;
  const std::uint32_t random23 = random >> 9;
  const float y = magnitude(x) / norm;
  const std::uint32_t bits = float_bits(y);
  const auto biased = static_cast<std::int32_t>(bits >> 23);
  const auto mantissa = static_cast<std::int32_t>(bits & 0x7FFFFF);
  const std::int32_t e_floor = biased - 127;
  const auto up = static_cast<std::int32_t>(static_cast<std::int32_t>(random23) < mantissa);
  const std::int32_t j_range = larger(-e_floor - up, 0);
  const auto in_range = static_cast<std::int32_t>((biased != 0) & (-e_floor <= deepest));
  const float p23 = y * below_scale * 8388608.0f;
  const auto below_up = static_cast<std::int32_t>(static_cast<float>(random23) < p23);
  const std::int32_t nonzero = in_range | below_up;
  const std::int32_t j = in_range ? j_range : deepest;
  const auto sign = static_cast<std::int32_t>((float_bits(x) >> 31) << 7);
  return static_cast<std::uint8_t>(static_cast<std::int32_t>(y > 0.0f) * nonzero * (sign | (j + c)));
}

// A code's value sign·2^(c-e)·scale (0 for e = 0); c - e in [-126, 0].
QCCL_HOST_DEVICE inline float exp_value(std::uint8_t code, std::int32_t c, float scale) {
  const std::int32_t e = code & 0x7F;
  const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80) << 24;
  const float value = float_from_bits((static_cast<std::uint32_t>(127 + c - e) << 23) | sign);
  return e == 0 ? 0.0f : value * scale;
}

// C_nat(a + b) of Global-QSGD Algorithm 2 (exp_dither.h's reduce, branch
// free). `valid` is false when the result would need an exponent outside
// [1, 127], which only corrupt input gives.
struct ExpSum {
  std::uint8_t code;
  bool valid;
};
QCCL_HOST_DEVICE inline ExpSum exp_sum(std::uint8_t a, std::uint8_t b, std::uint32_t random) {
  const std::int32_t ea = a & 0x7F, eb = b & 0x7F;
  const std::int32_t sa = a & 0x80, sb = b & 0x80;
  const bool a_larger = ea <= eb;  // the smaller exponent is the larger value
  const std::int32_t e1 = a_larger ? ea : eb;
  const std::int32_t e2 = a_larger ? eb : ea;
  const std::int32_t sign = a_larger ? sa : sb;
  const bool same = sa == sb;
  const std::int32_t d = e2 - e1;
  const std::int32_t k = same ? d : d - 1;
  const std::int32_t shift = 32 - smaller(larger(k, 1), 31);
  const bool happens = k == 0 || (k < 32 && random < (std::uint32_t{1} << shift));
  const std::int32_t e = same ? e1 - happens : e1 + happens;
  const bool cancels = !same && d == 0;
  const bool both = ea != 0 && eb != 0;
  if (!both) return {ea == 0 ? b : a, true};
  if (cancels) return {0, true};
  return {static_cast<std::uint8_t>(sign | e), e >= 1 && e <= 127};
}

// Min-max quantization (QSDP §5, minmax.h): random rounding of
// v = (x − lo)·scale between evenly spaced levels, in double.
QCCL_HOST_DEVICE inline std::uint8_t minmax_level(float x, double lo, double scale, std::int32_t top,
                                                  std::uint32_t random) {
  const double u = static_cast<double>(static_cast<std::int32_t>(random >> 8)) * 0x1p-24;
  const double v = (static_cast<double>(x) - lo) * scale;
  const auto lower = static_cast<std::int32_t>(v);
  const auto up = static_cast<std::int32_t>(u < v - static_cast<double>(lower));
  return static_cast<std::uint8_t>(smaller(lower + up, top));
}

// Rounding onto the lattice lo + step·(Z + ρ) (QSDP's weights): offset ½ − ρ
// gives the nearest point, ½ + ρ a dither.
QCCL_HOST_DEVICE inline std::uint8_t lattice_level(float x, double lo, double inv_step,
                                                   double offset, std::int32_t top) {
  const double v = (static_cast<double>(x) - lo) * inv_step + offset;
  return static_cast<std::uint8_t>(smaller(static_cast<std::int32_t>(v), top));
}

// fp32(base + step·q), saturated.
QCCL_HOST_DEVICE inline float affine_value(std::uint8_t q, double base, double step) {
  return saturate(static_cast<float>(base + step * static_cast<double>(q)));
}

// A key per finite float that orders as the floats do (-0 below +0): a
// positive float's bits already do; a negative one's magnitude bits are
// flipped. The min and max of keys are exact whatever the order they are
// taken in, so a bucket's range is the same on every backend.
QCCL_HOST_DEVICE inline std::int32_t order_key(float f) {
  const auto b = static_cast<std::int32_t>(float_bits(f));
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}
QCCL_HOST_DEVICE inline float from_order_key(std::int32_t key) {
  return float_from_bits(static_cast<std::uint32_t>(key ^ ((key >> 31) & 0x7FFFFFFF)));
}

// One value's level index in a min-max bucket [lo, hi] with evenly spaced
// levels 0..top (QSDP §4.1, minmax.h): a constant bucket is all index 0;
// else random rounding (`lattice` false) or rounding on the lattice with
// `offset` (½ − ρ: the nearest point of Q^w_δ; ½ + ρ: the dither), in
// double, as MinMaxEncoding quantizes.
QCCL_HOST_DEVICE inline std::uint8_t minmax_bucket_level(float x, float lo, float hi, std::int32_t top,
                                                         bool lattice, double offset,
                                                         std::uint32_t random) {
  if (!(lo < hi)) return 0;
  const double inverse = static_cast<double>(top) / (static_cast<double>(hi) - lo);
  return lattice ? lattice_level(x, lo, inverse, offset, top) : minmax_level(x, lo, inverse, top, random);
}

// What index q of a bucket [lo, hi] decodes to: lo for a constant bucket,
// else fp32(base + δ·q), δ = (hi − lo)/top, base lo (or lo + δ·ρ on the
// shifted lattice, `shift` = ρ; 0 otherwise).
QCCL_HOST_DEVICE inline float minmax_bucket_value(std::uint8_t q, float lo, float hi, std::int32_t top,
                                                  double shift) {
  const double range = static_cast<double>(hi) - lo;
  if (range == 0) return lo;
  const double step = range / static_cast<double>(top);
  return affine_value(q, static_cast<double>(lo) + step * shift, step);
}

// Min-max bucket records, how a vector's min-max codes lie in a device's
// memory (and its host reference's): bucket b of every `per_range`
// elements is [fp32 lo][fp32 hi][one uint8 level index per element], the
// last bucket as long as the elements left. A range of elements from a
// bucket's start is one contiguous run of records.
QCCL_HOST_DEVICE inline std::size_t record_bytes(std::size_t count, std::size_t per_range) {
  return (count + per_range - 1) / per_range * 2 * sizeof(float) + count;
}
// Where element i's index lies, and where its bucket's lo (hi 4 bytes on).
QCCL_HOST_DEVICE inline std::size_t record_index_at(std::size_t i, std::size_t per_range) {
  return i / per_range * (2 * sizeof(float) + per_range) + 2 * sizeof(float) + i % per_range;
}
QCCL_HOST_DEVICE inline std::size_t record_range_at(std::size_t i, std::size_t per_range) {
  return i / per_range * (2 * sizeof(float) + per_range);
}
// A little-endian fp32 at any byte address (records are not aligned).
QCCL_HOST_DEVICE inline float load_float(const std::uint8_t* p) {
  return float_from_bits(static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
}
QCCL_HOST_DEVICE inline void store_float(std::uint8_t* p, float v) {
  const std::uint32_t b = float_bits(v);
  p[0] = static_cast<std::uint8_t>(b);
  p[1] = static_cast<std::uint8_t>(b >> 8);
  p[2] = static_cast<std::uint8_t>(b >> 16);
  p[3] = static_cast<std::uint8_t>(b >> 24);
}
// Element i's decoded value in one rank's records.
QCCL_HOST_DEVICE inline float record_value(const std::uint8_t* records, std::size_t i,
                                           std::size_t per_range, std::int32_t top, double shift) {
  const std::uint8_t* range = records + record_range_at(i, per_range);
  return minmax_bucket_value(records[record_index_at(i, per_range)], load_float(range),
                             load_float(range + 4), top, shift);
}

// One element's result from the ranks' decoded values value_of(0..ranks−1)
// as a gathered codec forms it (collectives/decode_sum.h): the fp32 sum in
// rank order, then one fp32 division by divide_by (none for 1); where the
// fp32 sum overflowed, the values summed again in double and divided
// there, so a mean of values near fp32's largest is finite.
template <class ValueOf>
QCCL_HOST_DEVICE inline float mean_in_rank_order(std::int32_t ranks, std::int32_t divide_by,
                                                 ValueOf value_of) {
  float sum = value_of(0);
  for (std::int32_t q = 1; q < ranks; ++q) sum = sum + value_of(q);
  if (divide_by == 1) return sum;
  if (sum - sum == 0) return sum / static_cast<float>(divide_by);  // finite
  double wide = 0;
  for (std::int32_t q = 0; q < ranks; ++q) wide += value_of(q);
  return static_cast<float>(wide / divide_by);
}

// IEEE fp16 bits of x, rounded to nearest even (overflow to ±inf, NaN kept
// quiet with the top of its payload), as the x86 F16C instruction rounds.
QCCL_HOST_DEVICE inline std::uint16_t fp16_bits(float x) {
  const std::uint32_t bits = float_bits(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t abs = bits & 0x7FFFFFFFU;
  if (abs > 0x7F800000U) return static_cast<std::uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));
  if (abs >= 0x477FF000U) return static_cast<std::uint16_t>(sign | 0x7C00);  // rounds past 65504
  if (abs >= 0x38800000U) {  // normal in fp16: rebias, round 13 dropped bits to nearest even
    const std::uint32_t rebased = abs - 0x38000000U;
    const std::uint32_t rounded = rebased + 0xFFFU + ((rebased >> 13) & 1);
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal (or zero) in fp16: the value in units of 2^-24, to nearest even.
  const auto exponent = static_cast<std::int32_t>(abs >> 23);
  if (exponent < 102) return sign;  // below half of the smallest subnormal
  const std::uint32_t mantissa = (abs & 0x7FFFFF) | 0x800000;
  const auto shift = static_cast<std::uint32_t>(126 - exponent);  // 14..24
  const std::uint32_t halfway = 1U << (shift - 1);
  const std::uint32_t dropped = mantissa & ((1U << shift) - 1);
  std::uint32_t units = mantissa >> shift;
  if (dropped > halfway || (dropped == halfway && (units & 1))) ++units;
  return static_cast<std::uint16_t>(sign | units);
}

// The fp32 value of fp16 bits (exact).
QCCL_HOST_DEVICE inline float fp16_value(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0x1F) return float_from_bits(sign | 0x7F800000U | (mantissa << 13));
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float units = static_cast<float>(mantissa) * 0x1p-24f;  // subnormal or zero: exact
  return sign ? -units : units;
}

}  // namespace qccl::element_ops
