// The vectorised kernels (whichever instruction set this CPU selects) against
// plain scalar reference code of the same definition, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../support/patterns.h"
#include "qccl/common/counter_rng.h"
#include "qccl/codecs/exp_dither.h"
#include "qccl/codecs/kernels.h"

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
          const int wanted = static_cast<int>(lower) + (u < v - lower ? 1 : 0);
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

}  // namespace
}  // namespace qccl
