// Exponential dithering: the quantizer and Algorithm 2's reduce are unbiased
// with the variance the paper states (1/8 per quantization, at most a 9/8
// factor per reduction), the headroom rule holds in the worst case for every
// rank count, and the codec is unbiased end to end on ring and
// halving-doubling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "../support/test_names.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/counter_rng.h"
#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

namespace ed = exp_dither;

// Sample mean and second moment of f(draw) over `draws` counter values.
template <typename F>
std::pair<double, double> moments(int draws, F&& f) {
  double m1 = 0, m2 = 0;
  for (int i = 0; i < draws; ++i) {
    const double v = f(static_cast<std::uint64_t>(i));
    m1 += v / draws;
    m2 += v * v / draws;
  }
  return {m1, m2};
}

TEST(ExpDitherQuantizeTest, UnbiasedWithVarianceAtMostAnEighthOfTheSquare) {
  constexpr int kDraws = 200000;
  constexpr int c = 3, s = ed::levels(c);
  const CounterRng rng(1, 0, 0, 0, RngStream::quantize);
  for (float y : {1.0f, 0.75f, 0.6f, 0.3f, 0.26f, 0.0123f, 3e-20f, 1e-37f, 0.0f}) {
    const auto [mean, second] = moments(kDraws, [&](std::uint64_t i) {
      return ed::value(ed::quantize(y, false, c, s, rng.bits(i) >> 9), c);  // 2^-j
    });
    const double variance = second - mean * mean;
    // Within a level, the value is one of the two neighbouring powers of two,
    // so its variance is at most (y/8)·y; the sample mean's sd is sqrt(var/N).
    const double bound = static_cast<double>(y) * y / 8;
    EXPECT_NEAR(mean, y, 5 * std::sqrt(bound / kDraws) + 1e-12 * y) << "y = " << y;
    EXPECT_LE(variance, bound * (1 + 5 * std::sqrt(2.0 / kDraws)) + 1e-300) << "y = " << y;
  }
  EXPECT_EQ(ed::quantize(1.0f, true, c, s, 0), ed::kSignBit | c);  // y = 1: level 0, exactly
}

TEST(ExpDitherQuantizeTest, BelowTheSmallestLevelRoundsToItOrZero) {
  constexpr int c = 100, s = ed::levels(c);  // s = 28: smallest level 2^-27
  const float y = std::ldexp(1.0f, -29);      // a quarter of the smallest level
  const CounterRng rng(2, 0, 0, 0, RngStream::quantize);
  int up = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const auto code = ed::quantize(y, false, c, s, rng.bits(static_cast<std::uint64_t>(i)) >> 9);
    ASSERT_TRUE(code == 0 || ed::exponent(code) == s - 1 + c);
    up += code != 0;
  }
  EXPECT_NEAR(up, kDraws * 0.25, 5 * std::sqrt(kDraws * 0.25 * 0.75));
}

std::uint8_t code(int sign, int e) { return static_cast<std::uint8_t>((sign < 0 ? ed::kSignBit : 0) | e); }

// E[C(a+b)] = a+b and E[C(a+b)^2] <= 9/8 (a+b)^2 for every pair of exponents
// (difference 0..12) and signs, each within 5 standard errors.
TEST(ExpDitherReduceTest, UnbiasedAndAtMostNineEighthsOfTheSquare) {
  constexpr int kDraws = 100000;
  const CounterRng rng(3, 0, 0, 0, RngStream::reduce);
  for (int ea = 2; ea <= 4; ++ea) {
    for (int d = 0; d <= 12; ++d) {
      for (int sa : {1, -1}) {
        for (int sb : {1, -1}) {
          const std::uint8_t a = code(sa, ea), b = code(sb, ea + d);
          const double exact = ed::value(a, 0) + ed::value(b, 0);
          const auto [mean, second] = moments(kDraws, [&](std::uint64_t i) {
            std::uint8_t out = 0;
            EXPECT_TRUE(ed::reduce(a, b, rng.bits32(i), out));
            return ed::value(out, 0);
          });
          const double sd = std::sqrt(std::max(second - mean * mean, 0.0) / kDraws);
          EXPECT_NEAR(mean, exact, 5 * sd + 1e-15) << ea << "," << d << "," << sa << "," << sb;
          EXPECT_LE(second, 9.0 / 8 * exact * exact + 5 * 2 * std::abs(exact) * sd + 1e-15)
              << ea << "," << d << "," << sa << "," << sb;
        }
      }
    }
  }
  std::uint8_t out = 99;
  EXPECT_TRUE(ed::reduce(code(1, 5), 0, 0, out));
  EXPECT_EQ(out, code(1, 5));  // adding zero
  EXPECT_TRUE(ed::reduce(code(1, 5), code(-1, 5), 0, out));
  EXPECT_EQ(out, 0);  // x - x
}

// The worst case: every rounding that can go up does (random bits 0). A ring
// accumulator absorbing the largest value at each of n-1 hops, and
// halving-doubling combining equal largest partial sums for ceil(log2 n) rounds, stay at
// e >= 1 with the headroom rule, for every rank count 2..300; one exponent
// less is not enough, so the rule is tight.
TEST(ExpDitherHeadroomTest, WorstCaseNeverWrapsForAnyRankCount) {
  auto ring_ok = [](int n, int c) {
    std::uint8_t acc = code(1, c);
    for (int hop = 1; hop < n; ++hop) {
      if (!ed::reduce(acc, code(1, c), 0, acc)) return false;
      // Worst case for the next hop: the accumulator doubled (e decreased).
    }
    return ed::exponent(acc) >= 1;
  };
  auto tree_ok = [](int n, int c) {
    std::uint8_t partial = code(1, c);
    for (int round = 0; round < ed::ceil_log2(n); ++round) {
      // Two equal partial sums (the largest possible) plus an up-rounding
      // from a smaller third operand would need another round, so equal
      // operands (exact doubling) are the worst case per round.
      if (!ed::reduce(partial, partial, 0, partial)) return false;
    }
    return true;
  };
  for (int n = 2; n <= 300; ++n) {
    const int ring_c = ed::headroom(n, true), tree_c = ed::headroom(n, false);
    EXPECT_TRUE(ring_ok(n, ring_c)) << n;
    EXPECT_TRUE(tree_ok(n, tree_c)) << n;
    EXPECT_FALSE(ring_ok(n, ring_c - 1)) << n << ": ring headroom is not tight";
    EXPECT_FALSE(tree_ok(n, tree_c - 1)) << n << ": tree headroom is not tight";
    EXPECT_GE(ed::levels(ring_c), 95);
  }
}

std::vector<float> input_of(int rank, std::size_t d) {
  // Magnitudes spread over many binades: exponential dithering's domain.
  return make_vector(d, [&](std::size_t i) {
    return noise(rank, i) * std::ldexp(1.0f, -static_cast<int>((i * 7 + static_cast<std::size_t>(rank)) % 20));
  });
}

using Param = std::tuple<int, Algorithm>;
class ExpDitherCodecTest : public ::testing::TestWithParam<Param> {};

TEST_P(ExpDitherCodecTest, UnbiasedEndToEnd) {
  const auto [n, algorithm] = GetParam();
  expect_unbiased_end_to_end("global-qsgd:dither=exp", n, algorithm,
                             [](int r) { return input_of(r, 64); }, 3000);
}

INSTANTIATE_TEST_SUITE_P(RanksAlgorithms, ExpDitherCodecTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8),
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
                         ranks_algorithm_name);

// Theorem 3 for one rank: E_s is in U^{1,d}(1/8 + sqrt(d)/2^(s-1)), i.e.
// E||Q(x) - x||^2 <= (1/8 + sqrt(d)/2^(s-1)) ||x||^2. (The theorem states it
// for s <= 1 + log sqrt(nd); more levels only shrink the second term.)
TEST(ExpDitherCodecVarianceTest, WithinTheorem3BoundForOneRank) {
  constexpr std::size_t kD = 2048;
  constexpr int kRounds = 100;
  const auto x = input_of(0, kD);
  double squared = 0;
  for (float v : x) squared += static_cast<double>(v) * v;
  const int s = ed::levels(ed::headroom(1, true));
  const double bound = (1.0 / 8 + std::sqrt(static_cast<double>(kD)) / std::ldexp(1.0, s - 1)) * squared;
  std::vector<double> exact(x.begin(), x.end());
  const SampleMean mse = sample_mean(squared_errors(
      collect_rounds("global-qsgd:dither=exp", 1, Algorithm::ring, [&](int) { return x; }, kRounds,
                     std::size_t{1} << 20, {.seed = 4, .bucket = 0}),
      exact));
  EXPECT_LE(mse.mean, bound + 5 * mse.standard_error);
  EXPECT_GT(mse.mean, 0.0);
}

TEST(ExpDitherCodecTest, ExtremesNeverWrapOnRingOrTree) {
  for (int n : {2, 3, 7, 8}) {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
      for (float m : {4.0f, -4.0f}) {
        run_world(n, [&](Communicator& comm) {
          auto codec = make_codec("global-qsgd:dither=exp", {.seed = 8});
          CollectiveOptions options;
          options.algorithm = algorithm;
          for (int round = 0; round < 50; ++round) {
            std::vector<float> data(300, m);
            data[0] = comm.rank() % 2 ? -m : m;  // alternating signs
            data[1] = 0.0f;
            data[2] = m * 1e-30f;  // tiny
            codec->allreduce_mean(comm, data, options);
            // All-equal inputs: each rank sends 2^-c. A C_nat result is at
            // least its larger operand and at most twice it, so the sum lies
            // between 2^-c and 2^hops·2^-c (hops: n-1 on the ring,
            // ceil(log2 n) rounds on the tree): the mean between |m|/n and
            // 2^hops·|m|/n — unbiased, but with a long tail on the ring.
            const int hops = ed::reductions_on_path(n, algorithm == Algorithm::ring);
            for (std::size_t i = 3; i < data.size(); ++i) {
              ASSERT_EQ(std::signbit(data[i]), std::signbit(m));
              ASSERT_LE(std::abs(data[i]), std::ldexp(std::abs(m), hops) / n);
              ASSERT_GE(std::abs(data[i]), std::abs(m) / n);
            }
            ASSERT_EQ(data[1], 0.0f);
            ASSERT_TRUE(std::isfinite(data[0]) && std::isfinite(data[2]));
          }
        });
      }
    }
  }
}

TEST(ExpDitherCodecTest, NativeAlgorithmIsRefused) {
  run_world(2, [](Communicator& comm) {
    auto codec = make_codec("global-qsgd:dither=exp");
    std::vector<float> data(4, 1.0f);
    CollectiveOptions options;
    options.algorithm = Algorithm::native;
    EXPECT_THROW(codec->allreduce_mean(comm, data, options), InvalidArgument);
  });
}

}  // namespace
}  // namespace qccl::test
