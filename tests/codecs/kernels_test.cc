// The vectorised kernels (whichever instruction set this CPU selects) against
// plain scalar reference code of the same definition, bit for bit; and every
// kernel's output pinned, so that the suite run on an emulated CPU of each
// instruction set (tests/codecs/kernels_isa_test.sh) shows all versions
// give the same bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "../support/patterns.h"
#include "qccl/common/checksum.h"
#include "qccl/common/counter_rng.h"
#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/codecs/kernels/kernels.h"

namespace qccl {
namespace {

// Lengths that exercise full vectors, the 256-element blocks and tails.
const std::size_t kLengths[] = {0, 1, 7, 15, 16, 17, 255, 256, 257, 1000, 4099};

std::vector<float> data_of(std::size_t n) {
  return test::make_vector(n, [](std::size_t i) {
    return test::noise(1, i) * std::ldexp(1.0f, -static_cast<int>(i % 9));
  });
}

TEST(KernelsTest, LinearEncodeMatchesTheScalarDefinition) {
  const CounterRng rng(5, 6, 7, 8, RngStream::quantize);
  for (std::size_t n : kLengths) {
    const auto x = data_of(n);
    for (int levels : {1, 7, 31, 127}) {
      const float scale = static_cast<float>(levels);  // |x| <= 1
      std::vector<std::int8_t> q(n);
      const std::uint64_t first = 12345;
      kernels::linear_encode_i8(x.data(), q.data(), n, scale, levels, rng.key_low(), rng.key_high(), first);
      for (std::size_t i = 0; i < n; ++i) {
        const float v = std::abs(x[i]) * scale;
        const float lower = std::floor(v);
        const float u = static_cast<float>(rng.bits32(first + i) >> 8) * 0x1p-24f;
        const int level = std::min(static_cast<int>(lower) + (u < v - lower ? 1 : 0), levels);
        ASSERT_EQ(q[i], std::signbit(x[i]) ? -level : level) << "n=" << n << " i=" << i;
      }
    }
  }
}

// IntSGD's fp32 rounding: sign-magnitude, clipped at `limit`, counted.
TEST(KernelsTest, IntRoundMatchesTheScalarDefinition) {
  const CounterRng rng(9, 1, 2, 3, RngStream::quantize);
  for (std::size_t n : kLengths) {
    const auto x = data_of(n);
    for (bool random : {true, false}) {
      for (float alpha : {3.5f, 400.0f}) {
        const std::int32_t limit = 31;
        const std::uint64_t first = 777;
        std::vector<std::int8_t> q8(n);
        std::vector<std::int32_t> q32(n);
        const auto r8 = kernels::int_round_i8(x.data(), q8.data(), n, alpha, limit, random,
                                              rng.key_low(), rng.key_high(), first);
        const auto r32 = kernels::int_round_i32(x.data(), q32.data(), n, alpha, limit, random,
                                                rng.key_low(), rng.key_high(), first);
        std::uint64_t clipped = 0;
        std::int32_t largest = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const float raw = std::abs(x[i]) * alpha;
          const float v = std::min(raw, static_cast<float>(limit));
          const float lower = std::floor(v);
          const float u = random ? static_cast<float>(rng.bits32(first + i) >> 8) * 0x1p-24f : 0.5f;
          const bool tie_to_odd = !random && v - lower == 0.5f && static_cast<int>(lower) % 2 == 1;
          const int wanted = static_cast<int>(lower) + (u < v - lower || tie_to_odd ? 1 : 0);
          clipped += raw > static_cast<float>(limit) || wanted > limit;
          const int level = std::min(wanted, limit);
          largest = std::max(largest, level);
          const int expected = std::signbit(x[i]) ? -level : level;
          ASSERT_EQ(q8[i], expected) << "n=" << n << " i=" << i;
          ASSERT_EQ(q32[i], expected) << "n=" << n << " i=" << i;
        }
        EXPECT_EQ(r8.clipped, clipped);
        EXPECT_EQ(r32.clipped, clipped);
        EXPECT_EQ(r8.largest, largest);
        EXPECT_EQ(r32.largest, largest);
      }
    }
  }
}

// Rounding to nearest breaks exact ties toward the even neighbour, as the
// fp64 path (std::nearbyint) and torch.round do: 0.5 → 0, 1.5 → 2, 2.5 → 2.
TEST(KernelsTest, IntRoundBreaksTiesToEven) {
  const std::vector<float> x{0.25f, 0.75f, 1.25f, -0.75f, 0.3f, -1.75f};
  std::vector<std::int8_t> q8(x.size());
  std::vector<std::int32_t> q32(x.size());
  kernels::int_round_i8(x.data(), q8.data(), x.size(), 2.0f, 31, false, 1, 2, 0);
  kernels::int_round_i32(x.data(), q32.data(), x.size(), 2.0f, 31, false, 1, 2, 0);
  EXPECT_EQ(std::vector<int>(q8.begin(), q8.end()), (std::vector<int>{0, 2, 2, -2, 1, -4}));
  EXPECT_EQ(q32, (std::vector<std::int32_t>{0, 2, 2, -2, 1, -4}));
}

TEST(KernelsTest, IntDecodeAndCheckedAddMatchTheirDefinitions) {
  for (std::size_t n : kLengths) {
    std::vector<std::int32_t> a(n), b(n);
    std::vector<std::int8_t> a8(n);
    std::int32_t largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<std::int32_t>(i % 201) - 100;
      b[i] = static_cast<std::int32_t>((i * 7) % 201) - 100;
      a8[i] = static_cast<std::int8_t>(a[i]);
      largest = std::max(largest, std::abs(a[i]));
    }
    std::vector<float> out(n), out8(n);
    EXPECT_EQ(kernels::int_decode_i32(a.data(), out.data(), n, 0.125f), largest);
    EXPECT_EQ(kernels::int_decode_i8(a8.data(), out8.data(), n, 0.125f), largest);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], static_cast<float>(a[i]) * 0.125f);
      ASSERT_EQ(out8[i], out[i]);
    }
    auto sum = a;
    EXPECT_TRUE(kernels::add_i32_checked(sum.data(), b.data(), n, 200));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]);
    if (n > 0) {  // one sum of 100 + 100 beyond a limit of 150
      sum = a;
      auto other = b;
      sum[n - 1] = 100;
      other[n - 1] = 100;
      EXPECT_FALSE(kernels::add_i32_checked(sum.data(), other.data(), n, 150)) << n;
    }
  }
}

TEST(KernelsTest, DecodeAddAndPackMatchTheirDefinitions) {
  for (std::size_t n : kLengths) {
    std::vector<std::int8_t> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<std::int8_t>(static_cast<int>(i % 15) - 7);
      b[i] = static_cast<std::int8_t>(static_cast<int>((i * 7) % 15) - 7);
    }
    std::vector<float> out(n);
    kernels::linear_decode_i8(a.data(), out.data(), n, 0.25f);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] * 0.25f);

    std::vector<std::uint8_t> packed((n + 1) / 2, 0xFF);
    std::vector<std::int8_t> unpacked(n);
    kernels::pack_i4(a.data(), packed.data(), n);
    kernels::unpack_i4(packed.data(), unpacked.data(), n);
    ASSERT_EQ(unpacked, a);
    if (n % 2) {
      ASSERT_EQ(packed.back() >> 4, 0) << "padding nibble not zero";
    }

    auto sum = a;
    ASSERT_TRUE(kernels::add_i8_checked(sum.data(), b.data(), n, 14));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]);
    if (n > 0) {
      auto over = a;
      std::vector<std::int8_t> push(n, 0);
      push[n - 1] = static_cast<std::int8_t>(20 - a[n - 1]);  // the last element reaches 20
      EXPECT_FALSE(kernels::add_i8_checked(over.data(), push.data(), n, 14));
    }
  }
}

// The fused decode-and-add is the decode followed by one fp32 addition per
// element, bit for bit: sums that overflow, saturated decodings (a step
// whose top levels exceed fp32) and signed zeros included.
TEST(KernelsTest, AffineDecodeAddIsTheDecodeThenAnAddition) {
  for (std::size_t n : kLengths) {
    std::vector<std::uint8_t> q(n);
    std::vector<float> sum(n);
    for (std::size_t i = 0; i < n; ++i) {
      q[i] = static_cast<std::uint8_t>((i * 37) % 256);
      sum[i] = i % 7 == 0 ? 3.3e38f : i % 7 == 1 ? -0.0f : static_cast<float>(i % 11) - 5.5f;
    }
    for (const double step : {0.001, 1.5e36}) {
      std::vector<float> decoded(n);
      kernels::affine_decode_u8(q.data(), decoded.data(), n, -0.25, step);
      auto fused = sum;
      kernels::affine_decode_add_u8(q.data(), fused.data(), n, -0.25, step);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(test::same_bits(fused[i], sum[i] + decoded[i]))
            << "n " << n << ", step " << step << ", element " << i;
      }
    }
  }
}

// Decoded outputs of 8 MiB and more are streamed past the cache after an
// alignment head, in blocks: every element, at any alignment of the output
// and either parity of the head (4-bit levels share bytes), must still be
// the plain definition's value.
TEST(KernelsTest, LargeDecodesMatchTheirDefinitionsAtEveryAlignment) {
  const std::size_t n = (std::size_t{8} << 20) / sizeof(float) + 1001;
  std::vector<std::int8_t> q(n);
  std::vector<std::uint8_t> code(n);
  for (std::size_t i = 0; i < n; ++i) {
    q[i] = static_cast<std::int8_t>(static_cast<int>((i * 7919) % 15) - 7);
    code[i] = static_cast<std::uint8_t>(i % 3 == 0 ? 0 : ((i * 31) % 100 + 1) | (i % 2) << 7);
  }
  std::vector<std::uint8_t> packed((n + 1) / 2);
  kernels::pack_i4(q.data(), packed.data(), n);
  std::vector<float> storage(n + 16);
  for (std::size_t offset : {0, 1, 2, 3, 15}) {  // head of 0, odd and even lengths
    float* out = storage.data() + offset;
    kernels::linear_decode_i8(q.data(), out, n, 0.25f);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], q[i] * 0.25f) << offset << " " << i;
    std::fill(storage.begin(), storage.end(), -1.0f);
    kernels::linear_decode_i4(packed.data(), out, n, 0.25f);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], q[i] * 0.25f) << offset << " " << i;
    kernels::exp_decode(code.data(), out, n, 4, 0.75f);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], static_cast<float>(exp_dither::value(code[i], 4) * 0.75)) << offset << " " << i;
    }
  }
}

TEST(KernelsTest, PackedDecodeMatchesUnpackThenDecode) {
  for (std::size_t n : kLengths) {
    std::vector<std::int8_t> q(n);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(static_cast<int>((i * 5) % 16) - 8);
    std::vector<std::uint8_t> packed((n + 1) / 2);
    kernels::pack_i4(q.data(), packed.data(), n);
    std::vector<float> out(n);
    kernels::linear_decode_i4(packed.data(), out.data(), n, 3.0e38f);  // saturates at ±FLT_MAX
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], std::clamp(q[i] * 3.0e38f, -FLT_MAX, FLT_MAX)) << "n=" << n << " i=" << i;
    }
  }
}

TEST(KernelsTest, Fp16RoundsToNearestEvenLikeTheScalarConversion) {
  for (std::size_t n : kLengths) {
    auto x = data_of(n);
    if (n > 3) {
      x[0] = 70000.0f;  // overflows fp16
      x[1] = 1e-8f;     // fp16 subnormal
      x[2] = -0.0f;
    }
    std::vector<_Float16> h(n), g(n);
    kernels::fp16_encode(x.data(), h.data(), n, 0.5f);
    for (std::size_t i = 0; i < n; ++i) {
      const _Float16 expected = static_cast<_Float16>(x[i] * 0.5f);
      ASSERT_EQ(std::memcmp(&h[i], &expected, 2), 0) << "i=" << i;
    }
    std::vector<float> out(n);
    kernels::fp16_decode(h.data(), out.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(h[i]));
    g = h;
    kernels::fp16_add(g.data(), h.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const _Float16 expected = static_cast<_Float16>(static_cast<float>(h[i]) * 2.0f);
      ASSERT_EQ(std::memcmp(&g[i], &expected, 2), 0) << "i=" << i;
    }
  }
}

TEST(KernelsTest, AverageMatchesExactIntegerDivision) {
  const CounterRng rng(4, 4, 4, 4, RngStream::reduce);
  for (std::size_t n : kLengths) {
    std::vector<std::int8_t> a(n), b(n), out(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<std::int8_t>(static_cast<int>(i * 5 % 15) - 7);
      b[i] = static_cast<std::int8_t>(static_cast<int>(i * 11 % 15) - 7);
    }
    for (auto [ka, kb] : {std::pair{1, 1}, {1, 2}, {3, 4}, {7, 1}, {64, 63}, {1000, 1}}) {
      kernels::average_i8(a.data(), b.data(), out.data(), n, ka, kb, rng.key_low(), rng.key_high(), 9);
      const int k = ka + kb;
      for (std::size_t i = 0; i < n; ++i) {
        const int total = ka * a[i] + kb * b[i];
        int q = total / k, r = total % k;
        if (r < 0) {
          r += k;
          --q;
        }
        const float u = static_cast<float>(rng.bits32(9 + i) >> 8) * 0x1p-24f;
        const int expected = q + (u < static_cast<float>(r) * (1.0f / static_cast<float>(k)) ? 1 : 0);
        ASSERT_EQ(out[i], expected) << ka << "," << kb << " i=" << i;
        ASSERT_GE(out[i], std::min(a[i], b[i]));
        ASSERT_LE(out[i], std::max(a[i], b[i]));
      }
    }
  }
}

TEST(KernelsTest, ExpEncodeAndDecodeMatchTheScalarDefinition) {
  const CounterRng rng(9, 1, 2, 3, RngStream::quantize);
  for (int c : {1, 4, 65, 100}) {
    const int s = exp_dither::levels(c);
    for (std::size_t n : kLengths) {
      auto x = data_of(n);
      if (n > 4) {
        x[0] = 0.0f;
        x[1] = -1.0f;   // y = 1: level 0
        x[2] = 1e-39f;  // denormal: below every level
        x[3] = std::ldexp(1.0f, -(s + 1));  // below the smallest level
      }
      const float norm = 1.0f;
      std::vector<std::uint8_t> code(n);
      kernels::exp_encode(x.data(), code.data(), n, norm, c, s, rng.key_low(), rng.key_high(), 77);
      for (std::size_t i = 0; i < n; ++i) {
        const auto expected = exp_dither::quantize(std::abs(x[i]) / norm, std::signbit(x[i]), c, s,
                                                   rng.bits32(77 + i) >> 9);
        ASSERT_EQ(code[i], expected) << "c=" << c << " n=" << n << " i=" << i << " x=" << x[i];
      }
      std::vector<float> out(n);
      kernels::exp_decode(code.data(), out.data(), n, c, 0.75f);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], static_cast<float>(exp_dither::value(code[i], c) * 0.75)) << i;
      }
    }
  }
}

// Every pair of codes (both signs, zero, exponents 1..127) through the
// kernel and the scalar reduce, with the same random numbers.
TEST(KernelsTest, ExpReduceMatchesTheScalarReduceOnEveryPairOfCodes) {
  const CounterRng rng(1, 2, 3, 4, RngStream::reduce);
  std::vector<std::uint8_t> a, b;
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      if ((x & 0x7F) == 0 && x != 0) continue;  // a negative zero code is never produced
      if ((y & 0x7F) == 0 && y != 0) continue;
      a.push_back(static_cast<std::uint8_t>(x));
      b.push_back(static_cast<std::uint8_t>(y));
    }
  }
  // Valid inputs only: pairs whose result stays at e >= 1.
  std::vector<std::uint8_t> acc = a;
  std::vector<std::uint8_t> expected(a.size());
  std::vector<bool> valid(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) valid[i] = exp_dither::reduce(a[i], b[i], rng.bits32(100 + i), expected[i]);
  const bool ok = kernels::exp_reduce(acc.data(), b.data(), a.size(), rng.key_low(), rng.key_high(), 100);
  EXPECT_FALSE(ok);  // the set includes e1 = 1 same-sign pairs that would need e = 0
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (valid[i]) {
      ASSERT_EQ(acc[i], expected[i]) << int(a[i]) << " + " << int(b[i]);
    }
  }
  // Without the pairs that can need e = 0 (same sign, both non-zero, the
  // larger at e = 1), the kernel reports success whatever the random draws.
  std::vector<std::uint8_t> va, vb;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int ea = a[i] & 0x7F, eb = b[i] & 0x7F;
    const bool may_overflow = ea != 0 && eb != 0 && (a[i] & 0x80) == (b[i] & 0x80) && std::min(ea, eb) == 1;
    if (!may_overflow) {
      va.push_back(a[i]);
      vb.push_back(b[i]);
    }
  }
  EXPECT_TRUE(kernels::exp_reduce(va.data(), vb.data(), va.size(), rng.key_low(), rng.key_high(), 0));
}

TEST(KernelsTest, NormsDetectNonFiniteValuesAndMatchReferences) {
  for (std::size_t n : kLengths) {
    auto x = data_of(n);
    float largest = 0;
    double squares = 0;
    for (float v : x) {
      largest = std::max(largest, std::abs(v));
      squares += static_cast<double>(v) * v;
    }
    std::uint32_t bits;
    std::memcpy(&bits, &largest, 4);
    ASSERT_EQ(kernels::max_abs_bits(x.data(), n), bits);
    EXPECT_NEAR(kernels::sum_of_squares(x.data(), n), squares, 1e-6 * squares + 1e-30);
    const auto both = kernels::sum_of_squares_and_max_abs_bits(x.data(), n);
    EXPECT_EQ(both.largest_bits, bits);
    EXPECT_EQ(both.squares, kernels::sum_of_squares(x.data(), n));  // bit for bit
    if (n == 0) continue;
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
      for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {  // in a block of 1024 or the tail
        auto y = x;
        y[at] = bad;
        EXPECT_GE(kernels::max_abs_bits(y.data(), n), 0x7F800000U);
        EXPECT_GE(kernels::sum_of_squares_and_max_abs_bits(y.data(), n).largest_bits, 0x7F800000U)
            << n << " " << at;
      }
    }
  }
}

// The version GCC's dispatch runs here: the first of x86-64-v4 (AVX-512),
// x86-64-v3 (AVX2, FMA, F16C) and baseline x86-64 this CPU supports.
std::string kernels_level() {
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
  return "x86-64";
}

// kernels_isa_test.sh names the level its emulated CPU must select.
TEST(KernelsTest, RunTheInstructionSetExpected) {
  const char* expected = std::getenv("QCCL_EXPECT_KERNELS");
  if (expected == nullptr) GTEST_SKIP() << "runs the " << kernels_level() << " kernels";
  EXPECT_EQ(kernels_level(), expected);
}

template <typename T>
std::string digest(const std::vector<T>& v) {
  return checksum_text(checksum64(std::as_bytes(std::span(v))));
}

// Every kernel on the same inputs, its outputs as checksums. 4099 elements
// cover whole vectors, 256-element blocks and a tail; 2^21 + 5 floats of
// output (over 8 MiB) take the streamed stores.
std::map<std::string, std::string> kernel_digests() {
  std::map<std::string, std::string> d;
  for (const std::size_t n : {std::size_t{4099}, (std::size_t{1} << 21) + 5}) {
    const std::string at = "/" + std::to_string(n);
    const auto x = data_of(n);
    std::vector<float> out(n);
    std::vector<std::int8_t> q(n), q2(n);
    kernels::linear_encode_i8(x.data(), q.data(), n, 90.0f, 127, 0x1234, 0x5678, 17);
    d["linear_encode_i8" + at] = digest(q);
    kernels::linear_decode_i8(q.data(), out.data(), n, 0.01f);
    d["linear_decode_i8" + at] = digest(out);
    kernels::linear_encode_i8(x.data(), q2.data(), n, 6.0f, 7, 0x9abc, 0xdef0, 3);
    std::vector<std::uint8_t> packed((n + 1) / 2);
    kernels::pack_i4(q2.data(), packed.data(), n);
    d["pack_i4" + at] = digest(packed);
    kernels::linear_decode_i4(packed.data(), out.data(), n, 0.25f);
    d["linear_decode_i4" + at] = digest(out);
    std::vector<std::int8_t> avg(n);
    kernels::average_i8(q.data(), q2.data(), avg.data(), n, 3, 5, 0x1111, 0x2222, 9);
    d["average_i8" + at] = digest(avg);
    auto acc = q2;
    EXPECT_TRUE(kernels::add_i8_checked(acc.data(), q2.data(), n, 127));
    d["add_i8_checked" + at] = digest(acc);
    for (const bool random : {false, true}) {
      const std::string kind = random ? "/random" : "/nearest";
      const auto r8 = kernels::int_round_i8(x.data(), q.data(), n, 200.0f, 127, random, 7, 8, 5);
      d["int_round_i8" + kind + at] = digest(q) + "," + std::to_string(r8.clipped) + "," +
                                      std::to_string(r8.largest);
      std::vector<std::int32_t> q32(n);
      const auto r32 = kernels::int_round_i32(x.data(), q32.data(), n, 5e5f, 1 << 20, random, 7, 8, 5);
      d["int_round_i32" + kind + at] = digest(q32) + "," + std::to_string(r32.clipped) + "," +
                                       std::to_string(r32.largest);
      const auto largest = kernels::int_decode_i32(q32.data(), out.data(), n, 1e-5f);
      d["int_decode_i32" + kind + at] = digest(out) + "," + std::to_string(largest);
    }
    const auto largest8 = kernels::int_decode_i8(q.data(), out.data(), n, 0.5f);
    d["int_decode_i8" + at] = digest(out) + "," + std::to_string(largest8);
    std::vector<std::uint8_t> code(n), code2(n);
    const int c = 4, s = exp_dither::levels(c);
    kernels::exp_encode(x.data(), code.data(), n, 1.0f, c, s, 0x3333, 0x4444, 11);
    d["exp_encode" + at] = digest(code);
    kernels::exp_decode(code.data(), out.data(), n, c, 0.75f);
    d["exp_decode" + at] = digest(out);
    kernels::exp_encode(x.data(), code2.data(), n, 1.0f, c, s, 0x5555, 0x6666, 11);
    d["exp_reduce" + at] = std::to_string(kernels::exp_reduce(code.data(), code2.data(), n, 1, 2, 3)) +
                           "," + digest(code);
    const auto range = kernels::value_range(x.data(), n);
    d["value_range" + at] = digest(std::vector<float>{range.lo, range.hi});
    std::vector<std::uint8_t> u8(n);
    kernels::minmax_encode_u8(x.data(), u8.data(), n, range.lo, 255.0 / (range.hi - range.lo), 255,
                              0x7777, 0x8888, 13);
    d["minmax_encode_u8" + at] = digest(u8);
    kernels::lattice_encode_u8(x.data(), u8.data(), n, range.lo, 15.0 / (range.hi - range.lo), 0.3, 15);
    d["lattice_encode_u8" + at] = digest(u8);
    kernels::affine_decode_u8(u8.data(), out.data(), n, range.lo, (range.hi - range.lo) / 15.0);
    d["affine_decode_u8" + at] = digest(out);
    auto added = x;
    kernels::affine_decode_add_u8(u8.data(), added.data(), n, range.lo, (range.hi - range.lo) / 15.0);
    d["affine_decode_add_u8" + at] = digest(added);
    std::vector<_Float16> h(n), h2(n);
    kernels::fp16_encode(x.data(), h.data(), n, 3.0f);
    d["fp16_encode" + at] = digest(h);
    kernels::fp16_decode(h.data(), out.data(), n);
    d["fp16_decode" + at] = digest(out);
    kernels::fp16_encode(x.data(), h2.data(), n, -0.5f);
    kernels::fp16_add(h.data(), h2.data(), n);
    d["fp16_add" + at] = digest(h);
    d["max_abs_bits" + at] = std::to_string(kernels::max_abs_bits(x.data(), n));
    const auto both = kernels::sum_of_squares_and_max_abs_bits(x.data(), n);
    d["sum_of_squares" + at] = digest(std::vector<double>{kernels::sum_of_squares(x.data(), n),
                                                          both.squares});
  }
  return d;
}

// Computed on an AVX-512 CPU; the AVX2 and baseline versions must match.
// A deliberate change of a kernel's definition changes its line here:
// QCCL_PRINT_KERNEL_DIGESTS=1 makes the test print the whole table.
const std::map<std::string, std::string> kPinnedDigests = {
    {"add_i8_checked/2097157", "bbf91d93a956d134"},
    {"add_i8_checked/4099", "756f0a8bfd2c8c70"},
    {"affine_decode_add_u8/2097157", "69011204e82786f4"},
    {"affine_decode_add_u8/4099", "affbe5ff2edd9a3d"},
    {"affine_decode_u8/2097157", "829afc601557632b"},
    {"affine_decode_u8/4099", "a9d7a96990173c02"},
    {"average_i8/2097157", "57d45ed8e75b5533"},
    {"average_i8/4099", "f211c8a428f5dbde"},
    {"exp_decode/2097157", "cb4c19571757e990"},
    {"exp_decode/4099", "ca7e16e59995ae8f"},
    {"exp_encode/2097157", "ec5638e13d795ff4"},
    {"exp_encode/4099", "c81b904e5b406f3b"},
    {"exp_reduce/2097157", "1,ec5638e13d795ff4"},
    {"exp_reduce/4099", "1,c81b904e5b406f3b"},
    {"fp16_add/2097157", "39b8342795ef733f"},
    {"fp16_add/4099", "5b2ecb5d433cdf78"},
    {"fp16_decode/2097157", "f4d6503f8c96cb73"},
    {"fp16_decode/4099", "2da83a2107c0c0e4"},
    {"fp16_encode/2097157", "e809d31689be9738"},
    {"fp16_encode/4099", "77ed3660f50539e0"},
    {"int_decode_i32/nearest/2097157", "a248912a332703ad,499997"},
    {"int_decode_i32/nearest/4099", "3673b487f0cf7131,498492"},
    {"int_decode_i32/random/2097157", "6d886ee8c437cd39,499996"},
    {"int_decode_i32/random/4099", "e2ee706565e2c165,498491"},
    {"int_decode_i8/2097157", "df881192146a48eb,127"},
    {"int_decode_i8/4099", "5e00ed1be118cf68,127"},
    {"int_round_i32/nearest/2097157", "0c15c19ce89a553d,0,499997"},
    {"int_round_i32/nearest/4099", "ddca44d89f3a581d,0,498492"},
    {"int_round_i32/random/2097157", "ee13742861b33532,0,499996"},
    {"int_round_i32/random/4099", "83f41ba7db9156bf,0,498491"},
    {"int_round_i8/nearest/2097157", "fa14bccdc893c981,85683,127"},
    {"int_round_i8/nearest/4099", "904ea819e619dac0,173,127"},
    {"int_round_i8/random/2097157", "913cfc798c37fb93,85683,127"},
    {"int_round_i8/random/4099", "bcad3f5237b9b19e,173,127"},
    {"lattice_encode_u8/2097157", "310916516ea3ced7"},
    {"lattice_encode_u8/4099", "2a595af7a1d93d16"},
    {"linear_decode_i4/2097157", "ab381f44f083ace8"},
    {"linear_decode_i4/4099", "8db99669a0d793ca"},
    {"linear_decode_i8/2097157", "5bae36a9b2b45551"},
    {"linear_decode_i8/4099", "41902ebcc03a979f"},
    {"linear_encode_i8/2097157", "47c37f169afc56dd"},
    {"linear_encode_i8/4099", "cb67da47a1c8b1ea"},
    {"max_abs_bits/2097157", "1065353103"},
    {"max_abs_bits/4099", "1065302613"},
    {"minmax_encode_u8/2097157", "2488af8f2f354a64"},
    {"minmax_encode_u8/4099", "4738d37bea639585"},
    {"pack_i4/2097157", "7d3c1f0207eacbb6"},
    {"pack_i4/4099", "5d9919f16e6e795a"},
    {"sum_of_squares/2097157", "0a84c763030945ee"},
    {"sum_of_squares/4099", "53a9c6dff2ad235d"},
    {"value_range/2097157", "e80e833fa79a794a"},
    {"value_range/4099", "562030e2e6f4bba8"}
};

TEST(KernelsTest, GiveTheSameBitsOnEveryInstructionSet) {
  const auto digests = kernel_digests();
  if (std::getenv("QCCL_PRINT_KERNEL_DIGESTS") != nullptr) {
    for (const auto& [name, value] : digests) std::printf("    {\"%s\", \"%s\"},\n", name.c_str(), value.c_str());
  }
  EXPECT_EQ(digests.size(), kPinnedDigests.size());
  for (const auto& [name, value] : digests) {
    const auto pinned = kPinnedDigests.find(name);
    ASSERT_NE(pinned, kPinnedDigests.end()) << name << " has no pinned digest";
    EXPECT_EQ(value, pinned->second) << name << " on " << kernels_level();
  }
}

}  // namespace
}  // namespace qccl
