#include "qccl/codecs/kernels/kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/common/counter_rng.h"
#include "qccl/transport/half_sum.h"

#define QCCL_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace qccl::kernels {
namespace {

constexpr std::size_t kBlock = 256;

inline std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// std::clamp(v, -FLT_MAX, FLT_MAX), NaN included, in the operand order of
// the max and min instructions (std::clamp's compiles to compares and masks).
inline float saturate(float v) { return std::min(std::max(v, -FLT_MAX), FLT_MAX); }

// The generator's 32-bit hash input for element i is (first + i)·φ + k_low
// (CounterRng::bits32): it starts here and advances by φ per element.
constexpr std::uint32_t kPhi32 = 0x9E3779B9U;
inline std::uint32_t hash_start(std::uint64_t first, std::uint32_t k_low) {
  return static_cast<std::uint32_t>(first) * kPhi32 + k_low;
}

// Large decoded outputs go to memory with streaming (non-temporal) stores:
// an output beyond a core's share of the last-level cache (at most a few
// MiB on current x86 servers) cannot stay cached for its reader anyway, and
// ordinary stores first read every line they overwrite, almost half of a
// decode's memory traffic. Values are computed into an L1-sized block
// at the caller's full vector width, then streamed 32 bytes per store with
// AVX (16 with the baseline's SSE2). Results are the same bits either way.
constexpr std::size_t kStreamBytes = std::size_t{8} << 20;
constexpr std::size_t kStreamBlock = 256;  // floats; a multiple of 8

// out[j] = block[j] for j < kStreamBlock; out and block 32-byte aligned.
// Called through GCC's dispatcher (see fp16_encode_impl).
__attribute__((target("default"))) void stream_block(float* out, const float* block) {
  for (std::size_t j = 0; j < kStreamBlock; j += 4) _mm_stream_ps(out + j, _mm_load_ps(block + j));
}

__attribute__((target("avx"))) void stream_block(float* out, const float* block) {
  for (std::size_t j = 0; j < kStreamBlock; j += 8) {
    _mm256_stream_ps(out + j, _mm256_load_ps(block + j));
  }
}

// Writes n floats to out, streamed when the output is large: fill(dst, at,
// count) writes the values of elements at..at+count-1 to dst[0..count).
// Inlined (with `fill`) into each instruction set's version of its caller,
// which vectorises it there.
template <class Fill>
__attribute__((always_inline)) inline void write_floats(float* out, std::size_t n, Fill fill) {
  std::size_t i = 0;
  if (n * sizeof(float) >= kStreamBytes) {
    const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(out) % 64) % 64 / sizeof(float);
    fill(out, 0, head);
    alignas(64) float block[kStreamBlock];
    for (i = head; i + kStreamBlock <= n; i += kStreamBlock) {
      fill(block, i, kStreamBlock);
      stream_block(out + i, block);
    }
    _mm_sfence();  // the streamed stores are visible before any later store
  }
  fill(out + i, i, n - i);
}

// write_floats of out[i] = value(i).
template <class Value>
__attribute__((always_inline)) inline void write_values(float* out, std::size_t n, Value value) {
  write_floats(out, n, [value](float* dst, std::size_t at, std::size_t count)
                           __attribute__((always_inline)) {
                             for (std::size_t j = 0; j < count; ++j) dst[j] = value(at + j);
                           });
}

// Two's-complement nibbles, sign-extended: shift each to the top of a byte,
// then arithmetic-shift back.
inline std::int8_t low_nibble(std::uint8_t b) {
  return static_cast<std::int8_t>(static_cast<std::int8_t>(b << 4) >> 4);
}
inline std::int8_t high_nibble(std::uint8_t b) {
  return static_cast<std::int8_t>(static_cast<std::int8_t>(b) >> 4);
}

// unpack_i4's loop, inlined into kernels that unpack a block at a time.
__attribute__((always_inline)) inline void unpack_nibbles(const std::uint8_t* packed,
                                                          std::int8_t* q, std::size_t n) {
  for (std::size_t j = 0; j < n / 2; ++j) {
    q[2 * j] = low_nibble(packed[j]);
    q[2 * j + 1] = high_nibble(packed[j]);
  }
  if (n % 2) q[n - 1] = low_nibble(packed[n / 2]);
}

// max over i of the bits of |x[i]| (max_abs_bits).
__attribute__((always_inline)) inline std::uint32_t largest_in(const float* x, std::size_t n) {
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, bits_of(x[i]) & 0x7FFFFFFFU);
  return m;
}

// 16 fixed lanes (lane j sums elements j, j+16, ...) in fp32 per block of
// 1024, lanes and blocks then summed in double in a fixed order: the same
// result on every instruction set, whatever its vector width.
// A block whose fp32 lanes overflow (elements beyond about 1.8e19, whose
// squares exceed fp32) is summed again in double, element by element: the
// same decision and the same bits on every instruction set.
// With `largest_bits`, also max_abs_bits, from each block while it is in
// the L1 cache (a loop of its own, so both vectorise): memory is read once.
__attribute__((always_inline)) inline double squares_and_largest(const float* x, std::size_t n,
                                                                 std::uint32_t* largest_bits) {
  constexpr std::size_t kLanes = 16;
  double total = 0;
  std::uint32_t top = 0;
  std::size_t base = 0;
  for (; base + 1024 <= n; base += 1024) {
    float lane[kLanes] = {};
    for (std::size_t i = 0; i < 1024; i += kLanes) {
      for (std::size_t j = 0; j < kLanes; ++j) lane[j] += x[base + i + j] * x[base + i + j];
    }
    if (largest_bits != nullptr) top = std::max(top, largest_in(x + base, 1024));
    float largest = 0;
    for (float l : lane) largest = std::max(largest, l);
    if (largest <= FLT_MAX) {
      for (float l : lane) total += l;
      continue;
    }
    for (std::size_t i = base; i < base + 1024; ++i) total += static_cast<double>(x[i]) * x[i];
  }
  if (largest_bits != nullptr) *largest_bits = std::max(top, largest_in(x + base, n - base));
  for (; base < n; ++base) total += static_cast<double>(x[base]) * x[base];
  return total;
}

}  // namespace

QCCL_MULTIVERSION
std::uint32_t max_abs_bits(const float* x, std::size_t n) { return largest_in(x, n); }

QCCL_MULTIVERSION
double sum_of_squares(const float* x, std::size_t n) { return squares_and_largest(x, n, nullptr); }

QCCL_MULTIVERSION
SquaresAndLargest sum_of_squares_and_max_abs_bits(const float* x, std::size_t n) {
  SquaresAndLargest result;
  result.squares = squares_and_largest(x, n, &result.largest_bits);
  return result;
}

// One loop, levels in 32-bit lanes narrowed at the store. The hash input
// counter·φ + k_low advances by φ per element (a 32-bit vector induction
// variable: no 64-bit counter lanes, no multiply for it), so the generator
// costs its two mixing multiplies per element and nothing else.
QCCL_MULTIVERSION
void linear_encode_i8(const float* x, std::int8_t* q, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first) {
  std::uint32_t hashed = hash_start(first, k_low);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = mix32(hashed) ^ k_high;
    hashed += kPhi32;
    const float u = static_cast<float>(static_cast<std::int32_t>(r >> 8)) * 0x1p-24f;
    const float xv = x[i];
    const float v = __builtin_fabsf(xv) * scale;
    const auto lower = static_cast<std::int32_t>(v);  // v >= 0: truncation is floor
    // Up when u < v - lower (a compare and a masked add; -0.0 gives level 0).
    const auto up = static_cast<std::int32_t>(u < v - static_cast<float>(lower));
    const std::int32_t l = std::min(lower + up, levels);
    q[i] = static_cast<std::int8_t>(static_cast<std::int32_t>(bits_of(xv)) < 0 ? -l : l);
  }
}

namespace {

// One block of int_round_*: levels as int32 (one element width, so the loop
// vectorises); adds to the clipped count and the largest magnitude.
inline void int_round_block(const float* x, std::int32_t* level, std::size_t m, float alpha,
                            std::int32_t limit, bool random, std::uint32_t k_low,
                            std::uint32_t k_high, std::uint32_t first32, IntRoundResult& result) {
  const float limit_f = static_cast<float>(limit);  // may round up above limit for int32
  std::uint32_t clipped = 0;
  std::int32_t largest = result.largest;
  std::uint32_t hashed = hash_start(first32, k_low);
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint32_t r = mix32(hashed) ^ k_high;
    hashed += kPhi32;
    const float u = random ? static_cast<float>(static_cast<std::int32_t>(r >> 8)) * 0x1p-24f : 0.5f;
    const float xv = x[i];
    const float raw = __builtin_fabsf(xv) * alpha;
    const float v = raw < limit_f ? raw : limit_f;
    const auto lower = static_cast<std::int32_t>(v);  // v >= 0: truncation is floor
    const float fraction = v - static_cast<float>(lower);
    const auto up = static_cast<std::int32_t>(bits_of(u - fraction) >> 31);
    // Rounding to nearest breaks an exact tie toward the even neighbour, as
    // the scalar path (std::nearbyint) and torch.round do.
    const std::int32_t tie_up = static_cast<std::int32_t>(!random) &
                                static_cast<std::int32_t>(fraction == 0.5f) & lower;
    const std::int32_t wanted = lower + up + (tie_up & 1);
    clipped += static_cast<std::uint32_t>(raw > limit_f) | static_cast<std::uint32_t>(wanted > limit);
    const std::int32_t l = wanted < limit ? wanted : limit;
    largest = largest > l ? largest : l;
    const auto negative = -static_cast<std::int32_t>(bits_of(xv) >> 31);  // 0 or -1
    level[i] = (l ^ negative) - negative;
  }
  result.clipped += clipped;
  result.largest = largest;
}

}  // namespace

QCCL_MULTIVERSION
IntRoundResult int_round_i8(const float* x, std::int8_t* q, std::size_t n, float alpha,
                            std::int32_t limit, bool random, std::uint32_t k_low,
                            std::uint32_t k_high, std::uint64_t first) {
  std::int32_t level[kBlock];
  IntRoundResult result;
  for (std::size_t base = 0; base < n; base += kBlock) {
    const std::size_t m = std::min(kBlock, n - base);
    int_round_block(x + base, level, m, alpha, limit, random, k_low, k_high,
                    static_cast<std::uint32_t>(first + base), result);
    for (std::size_t i = 0; i < m; ++i) q[base + i] = static_cast<std::int8_t>(level[i]);
  }
  return result;
}

QCCL_MULTIVERSION
IntRoundResult int_round_i32(const float* x, std::int32_t* q, std::size_t n, float alpha,
                             std::int32_t limit, bool random, std::uint32_t k_low,
                             std::uint32_t k_high, std::uint64_t first) {
  IntRoundResult result;
  for (std::size_t base = 0; base < n; base += kBlock) {
    const std::size_t m = std::min(kBlock, n - base);
    int_round_block(x + base, q + base, m, alpha, limit, random, k_low, k_high,
                    static_cast<std::uint32_t>(first + base), result);
  }
  return result;
}

namespace {

// Magnitudes as unsigned 32-bit values, so that a corrupt INT32_MIN has one
// (2^31) rather than an overflowing negation; the caller rejects what is
// out of range.
template <class Int>
inline std::int64_t int_decode(const Int* s, float* out, std::size_t n, float factor) {
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t v = s[i];
    const auto bits = static_cast<std::uint32_t>(v);
    largest = std::max(largest, v < 0 ? 0U - bits : bits);
    out[i] = saturate(static_cast<float>(v) * factor);
  }
  return largest;
}

}  // namespace

QCCL_MULTIVERSION
std::int64_t int_decode_i8(const std::int8_t* s, float* out, std::size_t n, float factor) {
  return int_decode(s, out, n, factor);
}

QCCL_MULTIVERSION
std::int64_t int_decode_i32(const std::int32_t* s, float* out, std::size_t n, float factor) {
  return int_decode(s, out, n, factor);
}

QCCL_MULTIVERSION
bool add_i32_checked(std::int32_t* acc, const std::int32_t* in, std::size_t n, std::int32_t limit) {
  int outside = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t sum = static_cast<std::int64_t>(acc[i]) + in[i];
    outside |= static_cast<int>(sum > limit) | static_cast<int>(sum < -limit);
    acc[i] = static_cast<std::int32_t>(sum);
  }
  return outside == 0;
}

QCCL_MULTIVERSION
void pack_i4(const std::int8_t* q, std::uint8_t* packed, std::size_t n) {
  for (std::size_t j = 0; j < n / 2; ++j) {
    packed[j] = static_cast<std::uint8_t>((q[2 * j] & 0xF) | ((q[2 * j + 1] & 0xF) << 4));
  }
  if (n % 2) packed[n / 2] = static_cast<std::uint8_t>(q[n - 1] & 0xF);
}

QCCL_MULTIVERSION
void unpack_i4(const std::uint8_t* packed, std::int8_t* q, std::size_t n) {
  unpack_nibbles(packed, q, n);
}

QCCL_MULTIVERSION
void linear_decode_i8(const std::int8_t* q, float* out, std::size_t n, float step) {
  write_values(out, n, [q, step](std::size_t i) __attribute__((always_inline)) {
    return saturate(static_cast<float>(q[i]) * step);
  });
}

// Unpacked into an L1 block of levels, then decoded at full vector width. A
// range starting at an odd element (after write_floats' alignment head)
// takes its first element from a high nibble alone, one ending at an odd
// count its last from a low nibble.
QCCL_MULTIVERSION
void linear_decode_i4(const std::uint8_t* packed, float* out, std::size_t n, float step) {
  write_floats(out, n, [packed, step](float* dst, std::size_t at, std::size_t count)
                           __attribute__((always_inline)) {
                             const auto value = [step](std::int8_t level) {
                               return saturate(static_cast<float>(level) * step);
                             };
                             std::size_t k = 0;
                             if (at % 2 == 1 && count > 0) {
                               dst[0] = value(high_nibble(packed[at / 2]));
                               k = 1;
                             }
                             const std::uint8_t* bytes = packed + (at + k) / 2;
                             constexpr std::size_t kLevels = 4096;
                             std::int8_t q[kLevels];
                             for (std::size_t pairs; (pairs = std::min(kLevels, count - k) / 2) > 0;) {
                               for (std::size_t j = 0; j < pairs; ++j) {
                                 q[2 * j] = low_nibble(bytes[j]);
                                 q[2 * j + 1] = high_nibble(bytes[j]);
                               }
                               for (std::size_t j = 0; j < 2 * pairs; ++j) dst[k + j] = value(q[j]);
                               k += 2 * pairs;
                               bytes += pairs;
                             }
                             if (k < count) dst[k] = value(low_nibble(*bytes));
                           });
}

QCCL_MULTIVERSION
bool add_i8_checked(std::int8_t* acc, const std::int8_t* in, std::size_t n, std::int32_t limit) {
  int outside = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto sum = static_cast<std::int16_t>(acc[i] + in[i]);
    outside |= static_cast<int>(sum > limit) | static_cast<int>(sum < -limit);
    acc[i] = static_cast<std::int8_t>(sum);
  }
  return outside == 0;
}

QCCL_MULTIVERSION
void average_i8(const std::int8_t* a, const std::int8_t* b, std::int8_t* out, std::size_t n,
                std::int32_t ka, std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high,
                std::uint64_t first) {
  std::int32_t level[kBlock];
  const std::int32_t k = ka + kb;
  const float inverse_k = 1.0f / static_cast<float>(k);
  std::uint32_t hashed = hash_start(first, k_low);
  for (std::size_t base = 0; base < n; base += kBlock) {
    const std::size_t m = std::min(kBlock, n - base);
    for (std::size_t i = 0; i < m; ++i) {
      const std::int32_t total = ka * a[base + i] + kb * b[base + i];
      // floor(total / k): the fp32 quotient is within 2^-24·127 of the exact
      // one, and a non-integer quotient is at least 1/k from an integer.
      const float quotient = static_cast<float>(total) / static_cast<float>(k);
      auto q = static_cast<std::int32_t>(quotient);  // truncation toward zero
      q -= static_cast<std::int32_t>(static_cast<float>(q) > quotient);  // floor
      const std::int32_t remainder = total - q * k;  // in [0, k)
      const std::uint32_t r = mix32(hashed) ^ k_high;
      hashed += kPhi32;
      const float u = static_cast<float>(static_cast<std::int32_t>(r >> 8)) * 0x1p-24f;
      const float fraction = static_cast<float>(remainder) * inverse_k;
      level[i] = q + static_cast<std::int32_t>(bits_of(u - fraction) >> 31);
    }
    for (std::size_t i = 0; i < m; ++i) out[base + i] = static_cast<std::int8_t>(level[i]);
  }
}

// The range of keys (element_ops::order_key): exact in any order.
QCCL_MULTIVERSION
FloatRange value_range(const float* x, std::size_t n) {
  std::int32_t lo = element_ops::order_key(x[0]), hi = lo;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t key = element_ops::order_key(x[i]);
    lo = std::min(lo, key);
    hi = std::max(hi, key);
  }
  return {element_ops::from_order_key(lo), element_ops::from_order_key(hi)};
}

// In double, as the scalar paths: fp32 would err by ulps of the bucket's
// largest magnitude (x − lo, lo + step·k), a bias far above a value's own
// rounding for a value near 0 in a wide bucket.
QCCL_MULTIVERSION
void minmax_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double scale,
                      std::int32_t top, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first) {
  std::uint32_t hashed = hash_start(first, k_low);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = mix32(hashed) ^ k_high;
    hashed += kPhi32;
    const double u = static_cast<double>(static_cast<std::int32_t>(r >> 8)) * 0x1p-24;
    const double v = (static_cast<double>(x[i]) - lo) * scale;
    const auto lower = static_cast<std::int32_t>(v);  // v >= 0: truncation is floor
    const auto up = static_cast<std::int32_t>(u < v - static_cast<double>(lower));
    q[i] = static_cast<std::uint8_t>(std::min(lower + up, top));
  }
}

QCCL_MULTIVERSION
void lattice_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double inv_step,
                       double offset, std::int32_t top) {
  for (std::size_t i = 0; i < n; ++i) {
    const double v = (static_cast<double>(x[i]) - lo) * inv_step + offset;  // >= 0: truncation is floor
    q[i] = static_cast<std::uint8_t>(std::min(static_cast<std::int32_t>(v), top));
  }
}

QCCL_MULTIVERSION
void affine_decode_u8(const std::uint8_t* q, float* out, std::size_t n, double base, double step) {
  write_values(out, n, [=](std::size_t i) __attribute__((always_inline)) {
    return saturate(static_cast<float>(base + step * static_cast<double>(q[i])));
  });
}

QCCL_MULTIVERSION
void affine_decode_add_u8(const std::uint8_t* q, float* out, std::size_t n, double base,
                          double step) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] += saturate(static_cast<float>(base + step * static_cast<double>(q[i])));
  }
}

QCCL_MULTIVERSION
void exp_encode(const float* x, std::uint8_t* code, std::size_t n, float norm, std::int32_t c,
                std::int32_t s, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first) {
  const std::int32_t deepest = s - 1;
  const float below_scale = __builtin_ldexpf(1.0f, deepest);
  std::uint32_t hashed = hash_start(first, k_low);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t random23 = (mix32(hashed) ^ k_high) >> 9;
    hashed += kPhi32;
    const float xv = x[i];
    const float y = __builtin_fabsf(xv) / norm;
    const std::uint32_t bits = bits_of(y);
    const auto biased = static_cast<std::int32_t>(bits >> 23);
    const auto mantissa = static_cast<std::int32_t>(bits & 0x7FFFFF);
    const std::int32_t e_floor = biased - 127;
    // In a level's range: j = -e_floor, one less (the level above) with
    // probability mantissa / 2^23; never below level 0.
    const std::int32_t up = static_cast<std::int32_t>(static_cast<std::int32_t>(random23) < mantissa);
    const std::int32_t j_range = std::max(-e_floor - up, 0);
    const std::int32_t in_range = static_cast<std::int32_t>((biased != 0) & (-e_floor <= deepest));
    // Below the smallest level: 2^-deepest with probability y·2^deepest.
    const float p23 = y * below_scale * 8388608.0f;
    const std::int32_t below_up = static_cast<std::int32_t>(static_cast<float>(random23) < p23);
    const std::int32_t nonzero = in_range | below_up;
    const std::int32_t j = in_range ? j_range : deepest;
    const std::int32_t sign = static_cast<std::int32_t>((bits_of(xv) >> 31) << 7);
    code[i] = static_cast<std::uint8_t>(static_cast<std::int32_t>(y > 0.0f) * nonzero *
                                        (sign | (j + c)));
  }
}

// 2^(c-e) as fp32 bits (c-e in [-126, 0]: a normal number), signed, scaled.
QCCL_MULTIVERSION
void exp_decode(const std::uint8_t* code, float* out, std::size_t n, std::int32_t c, float scale) {
  write_values(out, n, [code, c, scale](std::size_t i) __attribute__((always_inline)) {
    const std::int32_t e = code[i] & 0x7F;
    const std::uint32_t sign = static_cast<std::uint32_t>(code[i] & 0x80) << 24;
    const std::uint32_t bits = (static_cast<std::uint32_t>(127 + c - e) << 23) | sign;
    float value;
    std::memcpy(&value, &bits, 4);
    return e == 0 ? 0.0f : value * scale;
  });
}

// exp_dither::reduce without branches, in 32-bit lanes: bytes are widened
// to int32 first and narrowed after, so each loop has one element width.
QCCL_MULTIVERSION
bool exp_reduce(std::uint8_t* acc, const std::uint8_t* in, std::size_t n, std::uint32_t k_low,
                std::uint32_t k_high, std::uint64_t first) {
  std::int32_t a[kBlock], b[kBlock], out[kBlock];
  std::uint32_t hashed = hash_start(first, k_low);
  std::int32_t invalid = 0;
  for (std::size_t base = 0; base < n; base += kBlock) {
    const std::size_t m = std::min(kBlock, n - base);
    for (std::size_t i = 0; i < m; ++i) {
      a[i] = acc[base + i];
      b[i] = in[base + i];
    }
    for (std::size_t i = 0; i < m; ++i) {
      const std::int32_t ea = a[i] & 0x7F, eb = b[i] & 0x7F;
      const std::int32_t sa = a[i] & 0x80, sb = b[i] & 0x80;
      const std::int32_t a_larger = static_cast<std::int32_t>(ea <= eb);  // smaller exponent
      const std::int32_t e1 = a_larger ? ea : eb;
      const std::int32_t e2 = a_larger ? eb : ea;
      const std::int32_t sign = a_larger ? sa : sb;
      const std::int32_t same = static_cast<std::int32_t>(sa == sb);
      const std::int32_t d = e2 - e1;
      const std::int32_t k = same ? d : d - 1;  // >= 0 whenever it is used
      const std::uint32_t r = mix32(hashed) ^ k_high;
      hashed += kPhi32;
      const std::int32_t shift = 32 - std::min(std::max(k, 1), 31);
      const std::int32_t happens = static_cast<std::int32_t>(
          (k == 0) | ((k < 32) & (r < (std::uint32_t{1} << shift))));
      const std::int32_t e = same ? e1 - happens : e1 + happens;
      const std::int32_t cancels = static_cast<std::int32_t>((same == 0) & (d == 0));
      const std::int32_t both = static_cast<std::int32_t>((ea != 0) & (eb != 0));
      const std::int32_t sum = cancels ? 0 : (sign | e);
      invalid |= both & (cancels ^ 1) & static_cast<std::int32_t>((e < 1) | (e > 127));
      out[i] = both ? sum : (ea == 0 ? b[i] : a[i]);
    }
    for (std::size_t i = 0; i < m; ++i) acc[base + i] = static_cast<std::uint8_t>(out[i]);
  }
  return invalid == 0;
}

// fp16: F16C converts 8 values per instruction; the baseline converts one at
// a time in software. Both round to nearest even. The versions are internal
// and called through GCC's dispatcher below: a caller in another file would
// otherwise bind to the default version directly.
namespace {

__attribute__((target("default"))) void fp16_encode_impl(const float* x, _Float16* h, std::size_t n,
                                                    float factor) {
  for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<_Float16>(x[i] * factor);
}

__attribute__((target("avx2,f16c"))) void fp16_encode_impl(const float* x, _Float16* h, std::size_t n,
                                                      float factor) {
  const __m256 f = _mm256_set1_ps(factor);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i packed = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), f),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), packed);
  }
  for (; i < n; ++i) h[i] = static_cast<_Float16>(x[i] * factor);
}

__attribute__((target("default"))) void fp16_decode_impl(const _Float16* h, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
}

__attribute__((target("avx2,f16c"))) void fp16_decode_impl(const _Float16* h, float* out,
                                                      std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(h[i]);
}

}  // namespace

void fp16_encode(const float* x, _Float16* h, std::size_t n, float factor) {
  fp16_encode_impl(x, h, n, factor);
}
void fp16_decode(const _Float16* h, float* out, std::size_t n) { fp16_decode_impl(h, out, n); }
void fp16_add(_Float16* acc, const _Float16* in, std::size_t n) { add_f16(acc, in, n); }

}  // namespace qccl::kernels
