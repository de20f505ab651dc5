// The codecs' hot loops over plain arrays, each compiled for several
// instruction sets and chosen at run time from the CPU's features (GCC
// function multiversioning: AVX-512, AVX2+FMA+F16C, or baseline x86-64), so a
// generic build runs at full speed on the machine it lands on. Each loop is
// written so the compiler vectorises it: 32-bit lanes (narrowed at the
// store), no branches, truncation instead of floor, sign-bit arithmetic
// instead of selects, the generator's hash input advanced as an induction
// variable. Results are identical on every instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qccl::kernels {

// max over i of the bits of |x[i]|: >= 0x7F800000 iff some x[i] is Inf or
// NaN; otherwise the bits of max|x[i]| (non-negative floats order as their bits).
std::uint32_t max_abs_bits(const float* x, std::size_t n);
// sum of x[i]^2: fp32 partial sums in 16 fixed lanes per block of 1024,
// summed in double (a block whose lanes overflow fp32: in double); identical
// on every instruction set.
double sum_of_squares(const float* x, std::size_t n);
// Both in one pass over x, each the same as its kernel's result: the
// 2-norm's statistic and finiteness check read the input once.
struct SquaresAndLargest {
  double squares = 0;
  std::uint32_t largest_bits = 0;
};
SquaresAndLargest sum_of_squares_and_max_abs_bits(const float* x, std::size_t n);

// Linear dithering (Global-QSGD L_s): q[i] = sign(x[i]) · (floor(v) + [u < frac(v)]),
// v = |x[i]|·scale, clamped to `levels`, where u = bits32(first + i) / 2^32 of
// the generator with key halves (k_low, k_high). Requires |x|·scale finite.
void linear_encode_i8(const float* x, std::int8_t* q, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first);
// Two's-complement 4-bit values, two per byte (element 2j in the low nibble);
// q[i] must be in [-8, 7]. An odd count leaves the last high nibble zero.
void pack_i4(const std::int8_t* q, std::uint8_t* packed, std::size_t n);
void unpack_i4(const std::uint8_t* packed, std::int8_t* q, std::size_t n);
// out[i] = q[i] · step, saturated at ±FLT_MAX (levels.h: saturate_to_fp32).
// Outputs of 8 MiB and more are written with streaming stores (same values).
void linear_decode_i8(const std::int8_t* q, float* out, std::size_t n, float step);
// linear_decode_i8 of the levels that unpack_i4 would give, without unpacking them first.
void linear_decode_i4(const std::uint8_t* packed, float* out, std::size_t n, float step);
// acc[i] += in[i]; returns false if any sum leaves [-limit, limit].
bool add_i8_checked(std::int8_t* acc, const std::int8_t* in, std::size_t n, std::int32_t limit);

// Integer rounding of IntSGD (int_rounding.h) in fp32, sign-magnitude:
// q[i] = sign(x[i])·min(⌊v⌋ + [u < v − ⌊v⌋], limit), v = |x[i]|·alpha, u =
// (bits32(first + i) >> 8)/2^24 (random) or 1/2 (deterministic: nearest,
// an exact tie to the even neighbour, as std::nearbyint). Int(t) and this
// have the same distribution. Returns
// how many elements were clipped (v beyond limit) and the largest |q[i]|.
// Requires alpha finite.
struct IntRoundResult {
  std::uint64_t clipped = 0;
  std::int32_t largest = 0;
};
IntRoundResult int_round_i8(const float* x, std::int8_t* q, std::size_t n, float alpha,
                            std::int32_t limit, bool random, std::uint32_t k_low,
                            std::uint32_t k_high, std::uint64_t first);
IntRoundResult int_round_i32(const float* x, std::int32_t* q, std::size_t n, float alpha,
                             std::int32_t limit, bool random, std::uint32_t k_low,
                             std::uint32_t k_high, std::uint64_t first);
// out[i] = s[i]·factor, saturated at ±FLT_MAX; returns max |s[i]| (2^31
// for INT32_MIN, which no valid sum holds).
std::int64_t int_decode_i8(const std::int8_t* s, float* out, std::size_t n, float factor);
std::int64_t int_decode_i32(const std::int32_t* s, float* out, std::size_t n, float factor);
// acc[i] += in[i]; returns false if any sum leaves [-limit, limit].
bool add_i32_checked(std::int32_t* acc, const std::int32_t* in, std::size_t n, std::int32_t limit);

// One averaging step of linear dithering (Global-QSGD §8): out[i] = the
// weighted mean (ka·a[i] + kb·b[i]) / (ka + kb), rounded up with probability
// equal to its fractional part (u < frac, u = bits32(first + i) >> 8 / 2^24,
// so exact to 2^-24). The floor is computed in fp32, exact while
// |total| <= 127·K and K = ka + kb < 2^24 / 127 (checked by the caller).
void average_i8(const std::int8_t* a, const std::int8_t* b, std::int8_t* out, std::size_t n,
                std::int32_t ka, std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high,
                std::uint64_t first);

// Exponential dithering codes (exp_dither.h): code[i] = quantize(|x[i]|/norm,
// sign, c, s, bits32(first + i) >> 9); out[i] = sign · 2^(c-e) · scale
// (streamed like linear_decode_i8's).
void exp_encode(const float* x, std::uint8_t* code, std::size_t n, float norm, std::int32_t c,
                std::int32_t s, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first);
void exp_decode(const std::uint8_t* code, float* out, std::size_t n, std::int32_t c, float scale);
// acc[i] = C_nat(acc[i] + in[i]) (exp_dither::reduce with bits32(first + i));
// returns false if some result would need an exponent below 1.
bool exp_reduce(std::uint8_t* acc, const std::uint8_t* in, std::size_t n, std::uint32_t k_low,
                std::uint32_t k_high, std::uint64_t first);

// Min-max quantization (minmax.h). value_range: (min, max) of n > 0 finite
// values, through keys that order as the floats do (so the loop vectorises).
struct FloatRange {
  float lo, hi;
};
FloatRange value_range(const float* x, std::size_t n);
// Random rounding between evenly spaced levels: v = (x[i] − lo)·scale,
// q[i] = min(⌊v⌋ + [u < v − ⌊v⌋], top) with u as linear_encode_i8's.
// Requires x[i] >= lo (lo is the values' minimum) and scale finite.
void minmax_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double scale,
                      std::int32_t top, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first);
// Rounding on a lattice: q[i] = min(⌊(x[i] − lo)·inv_step + offset⌋, top);
// offset ½ − ρ is the nearest point of lo + step·(Z + ρ), ½ + ρ a dither.
// Requires x[i] >= lo, offset >= 0 and inv_step finite.
void lattice_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double inv_step,
                       double offset, std::int32_t top);
// out[i] = fp32(base + step·q[i]), saturated at ±FLT_MAX. All three compute
// in double.
void affine_decode_u8(const std::uint8_t* q, float* out, std::size_t n, double base, double step);
// out[i] += fp32(base + step·q[i]) (saturated as above): affine_decode_u8
// and an fp32 addition, with the same bits.
void affine_decode_add_u8(const std::uint8_t* q, float* out, std::size_t n, double base,
                          double step);

// fp16 (round to nearest even): h[i] = fp16(x[i] · factor), out[i] = float(h[i]),
// acc[i] = fp16(float(acc[i]) + float(in[i])).
void fp16_encode(const float* x, _Float16* h, std::size_t n, float factor);
void fp16_decode(const _Float16* h, float* out, std::size_t n);
void fp16_add(_Float16* acc, const _Float16* in, std::size_t n);

}  // namespace qccl::kernels
