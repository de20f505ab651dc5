// The per-element bodies that the CUDA kernels run (element_ops.h),
// compiled here for the host, against the CPU codecs' kernels byte for byte:
// every encoding, decoding and in-transit reduction of the device codecs is
// checked on every build, with or without a GPU. Inputs mix magnitudes over
// many binades, exact zeros of both signs, subnormals, level boundaries and
// ties; generator counters include ones that wrap 2^32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../support/patterns.h"
#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/common/counter_rng.h"

namespace qccl {
namespace {

namespace ops = element_ops;

const std::size_t kLengths[] = {0, 1, 7, 255, 256, 257, 1000, 4099, 70001};
// Generator counters of the first element: zero, arbitrary, and just below
// 2^32 (the 32-bit hash input wraps inside the vector).
const std::uint64_t kFirsts[] = {0, 12345, (std::uint64_t{1} << 32) - 3, (std::uint64_t{5} << 32) + 17};

// Values over 40 binades of both signs, with zeros, -0, subnormals and
// integers and half-integers (rounding ties) mixed in.
std::vector<float> mixed_values(std::size_t n, int seed) {
  return test::make_vector(n, [seed](std::size_t i) {
    switch (i % 11) {
      case 0: return 0.0f;
      case 1: return -0.0f;
      case 2: return static_cast<float>(i % 7) * 0.5f - 1.5f;
      case 3: return std::ldexp(test::noise(seed, i), -130);  // subnormal
      default: return test::noise(seed, i) * std::ldexp(1.0f, static_cast<int>(i % 41) - 20);
    }
  });
}

float largest_magnitude(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::max(m, std::abs(v));
  return m;
}

CounterRng rng_for(int which) { return CounterRng(11, 3, static_cast<std::uint64_t>(which), 2, RngStream::quantize); }

TEST(ElementOpsTest, LinearLevelsAreTheCpuEncodersBytes) {
  const CounterRng rng = rng_for(1);
  for (std::size_t n : kLengths) {
    const auto x = mixed_values(n, 1);
    const float norm = std::max(largest_magnitude(x), 1.0f);
    for (int levels : {1, 7, 31, 63, 127}) {
      const float scale = static_cast<float>(levels / static_cast<double>(norm));
      for (std::uint64_t first : kFirsts) {
        std::vector<std::int8_t> cpu(n);
        kernels::linear_encode_i8(x.data(), cpu.data(), n, scale, levels, rng.key_low(),
                                  rng.key_high(), first);
        for (std::size_t i = 0; i < n; ++i) {
          const auto random = ops::random_bits(rng.key_low(), rng.key_high(), first + i);
          ASSERT_EQ(ops::linear_level(x[i], scale, levels, random), cpu[i])
              << "n=" << n << " levels=" << levels << " first=" << first << " i=" << i;
        }
      }
    }
  }
}

TEST(ElementOpsTest, LevelValuesAreTheCpuDecodersFloats) {
  std::vector<std::int8_t> q(256);
  for (int i = 0; i < 256; ++i) q[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(i - 128);
  for (float step : {0.0f, 1.0f / 127, 3.7e-3f, 1e30f, 3e36f, FLT_MAX}) {
    std::vector<float> cpu(q.size());
    kernels::linear_decode_i8(q.data(), cpu.data(), q.size(), step);
    for (std::size_t i = 0; i < q.size(); ++i) {
      ASSERT_TRUE(test::same_bits(ops::level_value(q[i], step), cpu[i])) << "step=" << step << " q=" << int{q[i]};
    }
  }
}

TEST(ElementOpsTest, NibblesPackAndDecodeAsTheCpuDoes) {
  for (std::size_t n : kLengths) {
    std::vector<std::int8_t> q(n);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(static_cast<int>(i * 7 % 16) - 8);
    std::vector<std::uint8_t> cpu((n + 1) / 2);
    kernels::pack_i4(q.data(), cpu.data(), n);
    std::vector<float> decoded(n);
    kernels::linear_decode_i4(cpu.data(), decoded.data(), n, 0.25f);
    for (std::size_t j = 0; j < n / 2; ++j) ASSERT_EQ(ops::nibble_pair(q[2 * j], q[2 * j + 1]), cpu[j]);
    if (n % 2) {
      ASSERT_EQ(ops::nibble_pair(q[n - 1], 0), cpu[n / 2]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t byte = cpu[i / 2];
      const std::int8_t level = i % 2 ? ops::high_nibble(byte) : ops::low_nibble(byte);
      ASSERT_EQ(level, q[i]);
      ASSERT_TRUE(test::same_bits(ops::level_value(level, 0.25f), decoded[i]));
    }
  }
}

TEST(ElementOpsTest, IntegerSumsAreCheckedAsTheCpuChecksThem) {
  for (std::int32_t limit : {12, 127}) {
    std::vector<std::int8_t> acc(256), in(256);
    for (int i = 0; i < 256; ++i) {
      acc[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(i % 25 - 12);
      in[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(i / 10 - 12);
    }
    for (std::size_t i = 0; i < acc.size(); ++i) {
      std::int8_t one = acc[i];
      const bool cpu = kernels::add_i8_checked(&one, &in[i], 1, limit);
      ASSERT_EQ(ops::sum_within(std::int64_t{acc[i]} + in[i], limit), cpu);
      ASSERT_EQ(static_cast<std::int8_t>(acc[i] + in[i]), one);
    }
  }
  const std::int32_t big = 2'000'000'000;
  std::int32_t acc = big, in = big;
  EXPECT_FALSE(kernels::add_i32_checked(&acc, &in, 1, INT32_MAX));
  EXPECT_FALSE(ops::sum_within(std::int64_t{big} + big, INT32_MAX));
  EXPECT_TRUE(ops::sum_within(std::int64_t{-big} - 147'483'647, INT32_MAX));
}

TEST(ElementOpsTest, AveragedLevelsAreTheCpuAveragesBytes) {
  const CounterRng rng = rng_for(2);
  const std::size_t n = 4099;
  std::vector<std::int8_t> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::int8_t>(static_cast<int>(i * 37 % 255) - 127);
    b[i] = static_cast<std::int8_t>(static_cast<int>(i * 91 % 255) - 127);
  }
  for (auto [ka, kb] : {std::pair{1, 1}, {1, 2}, {3, 4}, {2, 5}, {100, 27}, {1000, 1}}) {
    for (std::uint64_t first : kFirsts) {
      std::vector<std::int8_t> cpu(n);
      kernels::average_i8(a.data(), b.data(), cpu.data(), n, ka, kb, rng.key_low(), rng.key_high(), first);
      const float inverse_k = 1.0f / static_cast<float>(ka + kb);
      for (std::size_t i = 0; i < n; ++i) {
        const auto random = ops::random_bits(rng.key_low(), rng.key_high(), first + i);
        ASSERT_EQ(ops::averaged_level(a[i], b[i], ka, kb, inverse_k, random), cpu[i])
            << "ka=" << ka << " kb=" << kb << " i=" << i;
      }
    }
  }
}

TEST(ElementOpsTest, RoundedIntegersAreIntSgdsBytesAndCounts) {
  const CounterRng rng = rng_for(3);
  for (std::size_t n : kLengths) {
    const auto x = mixed_values(n, 3);
    for (float alpha : {1.0f, 2.0f, 37.5f, 1e6f}) {
      for (std::int32_t limit : {127, 5000, INT32_MAX / 2}) {
        for (bool random : {true, false}) {
          const std::uint64_t first = kFirsts[n % 4];
          std::vector<std::int32_t> cpu(n);
          const auto result = kernels::int_round_i32(x.data(), cpu.data(), n, alpha, limit, random,
                                                     rng.key_low(), rng.key_high(), first);
          std::uint64_t clipped = 0;
          std::int32_t largest = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const auto bits = ops::random_bits(rng.key_low(), rng.key_high(), first + i);
            const auto r = ops::rounded_integer(x[i], alpha, limit, random, bits);
            ASSERT_EQ(r.level, cpu[i]) << "alpha=" << alpha << " limit=" << limit << " i=" << i;
            clipped += r.clipped;
            largest = std::max(largest, r.level < 0 ? -r.level : r.level);
          }
          EXPECT_EQ(clipped, result.clipped);
          EXPECT_EQ(largest, result.largest);
          if (limit > 127) continue;
          std::vector<std::int8_t> narrow(n);
          kernels::int_round_i8(x.data(), narrow.data(), n, alpha, limit, random, rng.key_low(),
                                rng.key_high(), first);
          for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(narrow[i], static_cast<std::int8_t>(cpu[i]));
        }
      }
    }
  }
}

TEST(ElementOpsTest, IntegerDecodingIsTheCpusFloatsAndLargest) {
  const std::vector<std::int32_t> sums = {0, 1, -1, 127, -128, 5000, -77777, INT32_MAX, INT32_MIN + 1, INT32_MIN};
  for (float factor : {1.0f, 1e-6f, 3e38f}) {
    std::vector<float> cpu(sums.size());
    const std::int64_t largest = kernels::int_decode_i32(sums.data(), cpu.data(), sums.size(), factor);
    std::int64_t mine = 0;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      ASSERT_TRUE(test::same_bits(ops::level_value(sums[i], factor), cpu[i])) << sums[i];
      mine = std::max<std::int64_t>(mine, ops::integer_magnitude(sums[i]));
    }
    EXPECT_EQ(mine, largest);
  }
}

// The int64 wire's rounding (IntSGD §2 in fp64), which the host codec
// and the device kernel both call, against its definition written with the
// C library: clip α·x to ±c; else ⌊y⌋ + 1 with probability y − ⌊y⌋, u
// from CounterRng::bits64's top 53 bits, or std::nearbyint (ties to even).
// Scales that fp32 cannot hold and +inf (every non-zero clips, zeros stay
// zero); bounds of one and near 2^62; decoding against saturate in fp64.
TEST(ElementOpsTest, WideRoundedIntegersAreTheFp64Definition) {
  const CounterRng rng = rng_for(6);
  const double infinity = std::numeric_limits<double>::infinity();
  for (std::size_t n : {std::size_t{257}, std::size_t{4099}}) {
    const auto x = mixed_values(n, 6);
    for (double alpha : {1.0, 37.5, 1099511627776.3, 1e-3, 3.1e30, infinity}) {
      for (std::int64_t clip : {std::int64_t{1}, std::int64_t{5000}, (std::int64_t{1} << 62) - 512}) {
        for (bool random : {true, false}) {
          const auto limit = static_cast<double>(clip);
          const std::uint64_t first = kFirsts[n % 4];
          for (std::size_t i = 0; i < n; ++i) {
            ASSERT_EQ(ops::random_bits64(rng.key_low(), rng.key_high(), first + i), rng.bits64(first + i));
            const double v = static_cast<double>(x[i]), y = alpha * v;
            double expected = 0;
            if (v != 0 && y > limit) {
              expected = limit;
            } else if (v != 0 && y < -limit) {
              expected = -limit;
            } else if (v != 0 && !random) {
              expected = std::nearbyint(y);
            } else if (v != 0) {
              const double u = static_cast<double>(rng.bits64(first + i) >> 11) * 0x1p-53;
              expected = std::floor(y) + (u < y - std::floor(y) ? 1.0 : 0.0);
            }
            const auto r = ops::wide_rounded_integer(v, alpha, limit, random, random ? rng.bits64(first + i) : 0);
            ASSERT_EQ(r.level, static_cast<std::int64_t>(expected)) << "alpha=" << alpha << " clip=" << clip << " i=" << i;
            ASSERT_EQ(r.clipped, v != 0 && std::abs(y) > limit) << i;
          }
        }
      }
    }
  }
  for (std::int64_t q : {std::int64_t{0}, std::int64_t{-1}, (std::int64_t{1} << 62) - 512, INT64_MIN + 1}) {
    for (double step : {1.0, 1e-12, 0x1p-62, 3e38, 1e300}) {
      const double value = static_cast<double>(q) * step;
      const float expected = static_cast<float>(std::clamp(value, -static_cast<double>(FLT_MAX), static_cast<double>(FLT_MAX)));
      ASSERT_TRUE(test::same_bits(ops::wide_level_value(q, step), expected)) << q << " " << step;
    }
  }
}

TEST(ElementOpsTest, ExponentialCodesAreTheCpuEncodersBytes) {
  const CounterRng rng = rng_for(4);
  for (int ranks : {1, 2, 3, 4, 7, 64}) {
    for (bool ring : {true, false}) {
      const int c = exp_dither::headroom(ranks, ring), s = exp_dither::levels(c);
      const float below_scale = std::ldexp(1.0f, s - 1);
      for (std::size_t n : {std::size_t{1}, std::size_t{257}, std::size_t{70001}}) {
        const auto x = mixed_values(n, ranks);
        const float norm = std::max(largest_magnitude(x), FLT_MIN);
        const std::uint64_t first = kFirsts[static_cast<std::size_t>(ranks) % 4];
        std::vector<std::uint8_t> cpu(n);
        kernels::exp_encode(x.data(), cpu.data(), n, norm, c, s, rng.key_low(), rng.key_high(), first);
        std::vector<float> decoded(n);
        kernels::exp_decode(cpu.data(), decoded.data(), n, c, 0.75f);
        for (std::size_t i = 0; i < n; ++i) {
          const auto random = ops::random_bits(rng.key_low(), rng.key_high(), first + i);
          ASSERT_EQ(ops::exp_code(x[i], norm, c, s, below_scale, random), cpu[i])
              << "ranks=" << ranks << " i=" << i << " x=" << x[i];
          ASSERT_TRUE(test::same_bits(ops::exp_value(cpu[i], c, 0.75f), decoded[i]));
        }
      }
    }
  }
}

// Every pair of codes, through both the C_nat reduce kernel and the body.
TEST(ElementOpsTest, ExponentialSumsAreTheCpuReductionsBytes) {
  const CounterRng rng(13, 1, 0, (std::uint64_t{3} << 16) | 2, RngStream::reduce);
  std::vector<std::uint8_t> a, b;
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      a.push_back(static_cast<std::uint8_t>(x));
      b.push_back(static_cast<std::uint8_t>(y));
    }
  }
  for (std::uint64_t first : kFirsts) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint8_t cpu = a[i];
      const bool valid = kernels::exp_reduce(&cpu, &b[i], 1, rng.key_low(), rng.key_high(), first + i);
      const auto sum = ops::exp_sum(a[i], b[i], ops::random_bits(rng.key_low(), rng.key_high(), first + i));
      ASSERT_EQ(sum.valid, valid) << int{a[i]} << " + " << int{b[i]};
      if (valid) {
        ASSERT_EQ(sum.code, cpu) << int{a[i]} << " + " << int{b[i]};
      }
    }
  }
}

TEST(ElementOpsTest, MinMaxAndLatticeLevelsAreQsdpsBytes) {
  const CounterRng rng = rng_for(5);
  for (std::size_t n : kLengths) {
    if (n == 0) continue;
    const auto x = mixed_values(n, 5);
    const auto range = kernels::value_range(x.data(), n);
    for (int top : {1, 15, 255}) {
      const double lo = range.lo, width = static_cast<double>(range.hi) - range.lo;
      const double scale = width > 0 ? top / width : 0.0;
      const std::uint64_t first = kFirsts[n % 4];
      std::vector<std::uint8_t> cpu(n), lattice(n);
      kernels::minmax_encode_u8(x.data(), cpu.data(), n, lo, scale, top, rng.key_low(), rng.key_high(), first);
      kernels::lattice_encode_u8(x.data(), lattice.data(), n, lo, scale, 0.5 - 0.3125, top);
      std::vector<float> decoded(n), added = x;
      kernels::affine_decode_u8(cpu.data(), decoded.data(), n, lo, 1 / std::max(scale, 1e-300));
      kernels::affine_decode_add_u8(cpu.data(), added.data(), n, lo, 1 / std::max(scale, 1e-300));
      for (std::size_t i = 0; i < n; ++i) {
        const auto random = ops::random_bits(rng.key_low(), rng.key_high(), first + i);
        ASSERT_EQ(ops::minmax_level(x[i], lo, scale, top, random), cpu[i]) << "top=" << top << " i=" << i;
        ASSERT_EQ(ops::lattice_level(x[i], lo, scale, 0.5 - 0.3125, top), lattice[i]);
        const float value = ops::affine_value(cpu[i], lo, 1 / std::max(scale, 1e-300));
        ASSERT_TRUE(test::same_bits(value, decoded[i]));
        ASSERT_TRUE(test::same_bits(x[i] + value, added[i]));
      }
    }
  }
}

// fp16 in software against the CPU's conversions: every fp16 value back to
// fp32, and fp32 values stepping through every binade (boundaries of the
// subnormal, normal and overflowing ranges included) to fp16.
TEST(ElementOpsTest, Fp16BitsAreTheCpuConversions) {
  std::vector<std::uint16_t> every(65536);
  for (std::size_t h = 0; h < every.size(); ++h) every[h] = static_cast<std::uint16_t>(h);
  std::vector<float> widened(every.size());
  kernels::fp16_decode(reinterpret_cast<const _Float16*>(every.data()), widened.data(), every.size());
  // NaN payloads are left out: codecs refuse non-finite input, and
  // processors differ in the NaN an operation returns.
  const auto nan16 = [](std::uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; };
  for (std::size_t h = 0; h < every.size(); ++h) {
    if (nan16(every[h])) continue;
    ASSERT_TRUE(test::same_bits(ops::fp16_value(every[h]), widened[h])) << std::hex << h;
  }
  std::vector<float> x;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 4093) {
    const float value = float_from_bits(static_cast<std::uint32_t>(bits));
    if (!std::isnan(value)) x.push_back(value);
  }
  for (std::uint32_t edge : {0x477FEFFFU, 0x477FF000U, 0x477FE000U, 0x38800000U, 0x387FFFFFU,
                             0x33000000U, 0x33000001U, 0x32FFFFFFU, 0x7F800000U}) {
    x.push_back(float_from_bits(edge));
    x.push_back(-float_from_bits(edge));
  }
  for (float factor : {1.0f, 0.25f}) {
    std::vector<std::uint16_t> narrowed(x.size());
    kernels::fp16_encode(x.data(), reinterpret_cast<_Float16*>(narrowed.data()), x.size(), factor);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(ops::fp16_bits(x[i] * factor), narrowed[i]) << std::hex << float_bits(x[i]);
    }
  }
  std::vector<std::uint16_t> acc(every), in(every.rbegin(), every.rend());
  kernels::fp16_add(reinterpret_cast<_Float16*>(acc.data()), reinterpret_cast<const _Float16*>(in.data()), acc.size());
  for (std::size_t h = 0; h < every.size(); ++h) {
    if (nan16(every[h]) || nan16(in[h])) continue;
    const float sum = ops::fp16_value(every[h]) + ops::fp16_value(in[h]);
    ASSERT_EQ(ops::fp16_bits(sum), acc[h]) << std::hex << h;
  }
}

}  // namespace
}  // namespace qccl
