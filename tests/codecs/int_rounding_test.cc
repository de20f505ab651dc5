// Int(·) and its wire bounds (IntSGD §2, Lemma 1; §5.1's clipping): exact
// values where rounding is deterministic, and for the randomized rounding the
// mean and variance against their closed forms with 5σ tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "qccl/codecs/quantizers/adaptive_scale.h"
#include "qccl/codecs/quantizers/int_rounding.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

const CounterRng kRng(5, 0, 0, 0, RngStream::quantize);

TEST(IntRoundingTest, PerRankClipKeepsTheSumOfNRanksInRange) {
  EXPECT_EQ(per_rank_clip(IntWire::int8, 1), 127);
  EXPECT_EQ(per_rank_clip(IntWire::int8, 4), 31);
  EXPECT_EQ(per_rank_clip(IntWire::int8, 64), 1);
  EXPECT_EQ(per_rank_clip(IntWire::int8, 127), 1);
  EXPECT_THROW(per_rank_clip(IntWire::int8, 128), InvalidArgument);
  EXPECT_EQ(per_rank_clip(IntWire::int32, 12), 2147483647 / 12);
  for (int n : {1, 3, 12, 1000}) {
    const std::int64_t c = per_rank_clip(IntWire::int64, n);
    EXPECT_LE(c, std::numeric_limits<std::int64_t>::max() / n) << n;
    EXPECT_EQ(static_cast<std::int64_t>(static_cast<double>(c)), c) << "not exact in double";
  }
}

TEST(IntRoundingTest, DeterministicRoundsToNearestEvenAndCountsClips) {
  const std::vector<double> x{0.0, 0.2, 0.5, 1.5, -2.5, 2.6, -7.0, 40.0, -40.0, 31.0};
  std::vector<std::int8_t> q(x.size());
  const auto clipped =
      round_scaled<double, std::int8_t>(x, 1.0, IntRounding::deterministic, 31, kRng, 0, q.data());
  EXPECT_EQ(std::vector<int>(q.begin(), q.end()),
            (std::vector<int>{0, 0, 0, 2, -2, 3, -7, 31, -31, 31}));
  EXPECT_EQ(clipped, 2u);
}

TEST(IntRoundingTest, InfiniteScaleClipsEveryNonZeroAndKeepsZeros) {
  const std::vector<float> x{0.0f, 1e-30f, -3.0f};
  std::vector<std::int32_t> q(3);
  const auto clipped = round_scaled<float, std::int32_t>(
      x, std::numeric_limits<double>::infinity(), IntRounding::random, 1000, kRng, 0, q.data());
  EXPECT_EQ(q, (std::vector<std::int32_t>{0, 1000, -1000}));
  EXPECT_EQ(clipped, 2u);
}

// Lemma 1 for one coordinate: E[Int(t)] = t and Var = p(1 − p) <= 1/4 with
// p = t − ⌊t⌋. N independent draws (distinct element indices); the sample
// mean must be within 5σ = 5·sqrt(p(1−p)/N) of t and the sample variance
// within 5 standard deviations of p(1−p) (its variance is
// (μ4 − σ⁴)/N for a two-point variable, μ4 = p(1−p)(1 − 3p(1−p)), which is 0
// at p = 1/2, where only the error of the estimated mean is left).
TEST(IntRoundingTest, RandomRoundingIsUnbiasedWithLemma1Variance) {
  constexpr std::size_t kDraws = 200000;
  for (double t : {0.3, -2.75, 7.5, 100.01, -0.9}) {
    const std::vector<double> x(kDraws, t);
    std::vector<std::int32_t> q(kDraws);
    round_scaled<double, std::int32_t>(x, 1.0, IntRounding::random, 1 << 20, kRng, 17, q.data());
    const double p = t - std::floor(t), var = p * (1 - p);
    double mean = 0;
    for (auto v : q) {
      EXPECT_TRUE(v == std::floor(t) || v == std::floor(t) + 1) << t;
      mean += v;
    }
    mean /= kDraws;
    double sample_var = 0;
    for (auto v : q) sample_var += (v - mean) * (v - mean);
    sample_var /= kDraws - 1;
    EXPECT_NEAR(mean, t, 5 * std::sqrt(var / kDraws)) << t;
    // Plus the second-order term of estimating the mean: (p̂ − p)² <= 25·var/N at 5σ.
    const double mu4 = var * (1 - 3 * var);
    EXPECT_NEAR(sample_var, var, 5 * std::sqrt((mu4 - var * var) / kDraws) + 25 * var / kDraws)
        << t;
    EXPECT_LE(var, 0.25);
  }
}

TEST(IntRoundingTest, DrawsDependOnTheElementIndexOnly) {
  const std::vector<double> x(64, 0.5);
  std::vector<std::int8_t> whole(64), second_half(32);
  round_scaled<double, std::int8_t>(x, 1.0, IntRounding::random, 100, kRng, 0, whole.data());
  round_scaled<double, std::int8_t>(std::span(x).subspan(32), 1.0, IntRounding::random, 100, kRng,
                                    32, second_half.data());
  EXPECT_TRUE(std::equal(second_half.begin(), second_half.end(), whole.begin() + 32));
}

// Proposition 2 / Algorithm 2: α = η√d / √(2n·r + η²·d·ε²), r the moving
// average of ‖Δ‖² starting from 0, one per tensor.
TEST(AdaptiveScaleTest, FollowsTheMovingAverageRule) {
  const AdaptiveScale scale(0.9, 1e-3);
  std::vector<double> first(AdaptiveScale::kStateValues, 0.0), second = first;
  EXPECT_FALSE(AdaptiveScale::observed(first));
  scale.observe(first, 4.0, 0.5);
  scale.observe(first, 9.0, 0.25);
  scale.observe(second, 1.0, 0.5);
  scale.observe(second, 0.0, 0.25);
  ASSERT_TRUE(AdaptiveScale::observed(first));
  const double r0 = 0.9 * (0.1 * 4.0) + 0.1 * 9.0, r1 = 0.9 * (0.1 * 1.0);
  const int n = 4;
  const double eta = 0.25, eps = 1e-3;
  EXPECT_DOUBLE_EQ(scale.alpha(first, 10, n),
                   eta * std::sqrt(10.0) / std::sqrt(2 * n * r0 + eta * eta * 10 * eps * eps));
  EXPECT_DOUBLE_EQ(scale.alpha(second, 3, n),
                   eta * std::sqrt(3.0) / std::sqrt(2 * n * r1 + eta * eta * 3 * eps * eps));
}

TEST(AdaptiveScaleTest, BetaZeroEpsilonZeroIsProposition3) {
  const AdaptiveScale scale(0.0, 0.0);
  std::vector<double> state(AdaptiveScale::kStateValues, 0.0);
  scale.observe(state, 2.0, 0.1);
  EXPECT_DOUBLE_EQ(scale.alpha(state, 8, 3),
                   0.1 * std::sqrt(8.0) / (std::sqrt(6.0) * std::sqrt(2.0)));
  scale.observe(state, 0.0, 0.1);
  EXPECT_TRUE(std::isinf(scale.alpha(state, 8, 3)));
}

TEST(AdaptiveScaleTest, RejectsBadFeedback) {
  const AdaptiveScale scale(0.9, 1e-8);
  std::vector<double> state(AdaptiveScale::kStateValues, 0.0);
  EXPECT_THROW(check_step_size(0.0), InvalidArgument);
  EXPECT_THROW(check_step_size(std::numeric_limits<double>::infinity()), InvalidArgument);
  EXPECT_NO_THROW(check_step_size(0.1));
  EXPECT_THROW(scale.observe(state, std::nan(""), 0.1), InvalidArgument);
  EXPECT_THROW(scale.observe(state, 1.0, 0.0), InvalidArgument);
  EXPECT_FALSE(AdaptiveScale::observed(state));
  EXPECT_THROW(AdaptiveScale(1.0, 0.0), InvalidArgument);
  EXPECT_THROW(AdaptiveScale(0.5, -1.0), InvalidArgument);
}

}  // namespace
}  // namespace qccl::test
