// Global-QSGD linear dithering: the statistical properties the paper proves
// (unbiasedness, Theorem 3's variance bound), checked with fixed seeds and
// tolerances derived from the exact variance (5 sigma), plus overflow-free
// extremes, non-finite input, and identical results on every rank.
#include <gmock/gmock.h>
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
#include "qccl/codecs/quantizers/global_qsgd.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

TEST(GlobalQsgdLevelsTest, SumOfNRanksNeverExceedsTheSignedRange) {
  EXPECT_EQ(linear_levels_per_rank(8, 1), 127);
  EXPECT_EQ(linear_levels_per_rank(8, 4), 31);  // floor(127/4); ceil would wrap at 128
  for (int n = 1; n <= 127; ++n) {
    const int s = linear_levels_per_rank(8, n);
    EXPECT_LE(n * s, 127) << n;
    EXPECT_GT(n * (s + 1), 127) << n << ": not the largest safe level count";
  }
  EXPECT_THROW(linear_levels_per_rank(8, 128), InvalidArgument);
}

// Input of rank r: noise scaled so that the ranks' magnitudes differ.
std::vector<float> input_of(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) { return noise(rank, i) * (1.0f + 0.5f * rank); });
}

// Exact first two moments of the decoded mean for one element, mirroring the
// encoder's fp32 arithmetic: E = step * sum_r sign*v_r, Var = step^2 * sum_r f(1-f).
struct Moments {
  std::vector<double> mean, variance;
};

Moments exact_moments(int n, std::size_t d, double norm) {
  const int s = linear_levels_per_rank(8, n);
  const float scale = static_cast<float>(s / norm);
  const double step = static_cast<float>(norm / (static_cast<double>(s) * n));
  Moments m{std::vector<double>(d, 0.0), std::vector<double>(d, 0.0)};
  for (int r = 0; r < n; ++r) {
    const auto x = input_of(r, d);
    for (std::size_t i = 0; i < d; ++i) {
      const float v = std::abs(x[i]) * scale;
      const double f = v - std::floor(v);
      m.mean[i] += (std::signbit(x[i]) ? -1.0 : 1.0) * v * step;
      m.variance[i] += f * (1 - f) * step * step;
    }
  }
  return m;
}

double inf_norm(int n, std::size_t d) {
  double norm = 0;
  for (int r = 0; r < n; ++r) {
    for (float x : input_of(r, d)) norm = std::max(norm, std::abs(static_cast<double>(x)));
  }
  return norm;
}

using Param = std::tuple<int, Algorithm>;
class GlobalQsgdStatisticsTest : public ::testing::TestWithParam<Param> {};

// Over R independent rounds (the step advances the generator), each
// element's sample mean converges to its exact expectation within 5 sigma,
// that expectation equals the exact mean of the inputs, the mean squared
// error matches its exact expectation within 5 standard errors, and all ranks
// decoded identical bytes in every round.
TEST_P(GlobalQsgdStatisticsTest, UnbiasedWithTheExactVariance) {
  const auto [n, algorithm] = GetParam();
  constexpr std::size_t kD = 64;
  constexpr int kRounds = 3000;
  const double norm = inf_norm(n, kD);
  const Moments exact = exact_moments(n, kD, norm);
  std::vector<double> true_mean(kD, 0.0);
  for (int r = 0; r < n; ++r) {
    const auto x = input_of(r, kD);
    for (std::size_t i = 0; i < kD; ++i) true_mean[i] += x[i] / static_cast<double>(n);
  }

  // Several chunks per segment, so several owners per hop.
  const auto results = collect_rounds("global-qsgd", n, algorithm,
                                      [](int r) { return input_of(r, kD); }, kRounds, 64,
                                      {.seed = 2024, .bucket = 3});
  std::vector<double> sum(kD, 0.0);
  for (const auto& result : results) {
    for (std::size_t i = 0; i < kD; ++i) sum[i] += result[i];
  }
  const SampleMean mse = sample_mean(squared_errors(results, exact.mean));

  // Per element: within 5 sigma. Jointly: the squared z-scores of the
  // elements that are random sum to a chi-square with as many degrees of
  // freedom (mean k, sd sqrt(2k)), which also catches a bias too small to
  // show in any single element.
  double chi_square = 0;
  int degrees = 0;
  for (std::size_t i = 0; i < kD; ++i) {
    EXPECT_NEAR(exact.mean[i], true_mean[i], 1e-6 * norm) << "element " << i;
    const double sd = std::sqrt(exact.variance[i] / kRounds);
    EXPECT_NEAR(sum[i] / kRounds, exact.mean[i], 5 * sd + 1e-6 * norm) << "element " << i;
    if (exact.variance[i] > 0) {
      const double z = (sum[i] / kRounds - exact.mean[i]) / sd;
      chi_square += z * z;
      ++degrees;
    }
  }
  EXPECT_NEAR(chi_square, degrees, 5 * std::sqrt(2.0 * degrees)) << "elements jointly biased";
  double expected_mse = 0;
  for (double v : exact.variance) expected_mse += v;
  EXPECT_NEAR(mse.mean, expected_mse, 5 * mse.standard_error);
}

INSTANTIATE_TEST_SUITE_P(RanksAlgorithms, GlobalQsgdStatisticsTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8),
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
                         ranks_algorithm_name);

// Theorem 3: L_s is in U^{n,d}(theta) with theta = sqrt(d)/(sqrt(n) s) for
// s <= sqrt(nd), i.e. E||G(x) - mean||^2 <= theta/n * ||x||_{2,2}^2.
TEST(GlobalQsgdVarianceTest, WithinTheorem3Bound) {
  constexpr std::size_t kD = 4096;
  constexpr int kRounds = 60;
  for (int n : {2, 4, 8}) {
    const int s = linear_levels_per_rank(8, n);
    ASSERT_LE(s, std::sqrt(static_cast<double>(n) * kD)) << "theorem's condition";
    double squared_norm = 0;
    std::vector<double> mean(kD, 0.0);
    for (int r = 0; r < n; ++r) {
      const auto x = input_of(r, kD);
      for (std::size_t i = 0; i < kD; ++i) {
        squared_norm += static_cast<double>(x[i]) * x[i];
        mean[i] += x[i] / static_cast<double>(n);
      }
    }
    const double theta = std::sqrt(static_cast<double>(kD)) / (std::sqrt(static_cast<double>(n)) * s);
    const double bound = theta / n * squared_norm;
    const SampleMean mse = sample_mean(squared_errors(
        collect_rounds("global-qsgd", n, Algorithm::ring, [](int r) { return input_of(r, kD); },
                       kRounds, std::size_t{1} << 20, {.seed = 5, .bucket = 0}),
        mean));
    EXPECT_LE(mse.mean, bound + 5 * mse.standard_error) << n << " ranks";
  }
}

// Runs one allreduce_mean of per-rank inputs and returns rank 0's result.
std::vector<float> mean_of(int n, const std::function<std::vector<float>(int)>& input,
                           std::string_view spec = "global-qsgd") {
  std::vector<float> result;
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 9});
    auto data = input(comm.rank());
    codec->allreduce_mean(comm, data);
    expect_identical_across_ranks(comm, data);
    if (comm.rank() == 0) result = data;
  });
  return result;
}

// 4-bit linear dithering averages inside every step (§8): unbiased for every
// rank count, including n = 2 and n > 4, with odd lengths (two values share a
// byte) and several chunks per segment.
class GlobalQsgd4BitTest : public ::testing::TestWithParam<Param> {};

TEST_P(GlobalQsgd4BitTest, UnbiasedEndToEnd) {
  const auto [n, algorithm] = GetParam();
  expect_unbiased_end_to_end("global-qsgd:bits=4", n, algorithm,
                             [](int r) { return input_of(r, 63); }, 3000, 16);
}

INSTANTIATE_TEST_SUITE_P(RanksAlgorithms, GlobalQsgd4BitTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8),
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
                         ranks_algorithm_name);

TEST(GlobalQsgd4BitMeanTest, TwoRanksGetTheMeanNotTheSum) {
  // Levels 7 and 3 (norm 7, so one level is 1.0): the mean, 5, needs no rounding.
  const auto out = mean_of(2, [](int r) { return std::vector<float>(9, r == 0 ? 7.0f : 3.0f); },
                           "global-qsgd:bits=4");
  for (float y : out) EXPECT_EQ(y, 5.0f);
  // All ranks at +max / -max and alternating signs: no saturation or wrap.
  // Each of the n-1 ring reductions rounds by less than one level (2/7), and
  // later averaging only shrinks earlier errors, so the result is within n-1
  // levels of the exact mean.
  for (int n : {2, 5, 8}) {
    for (float y : mean_of(n, [](int) { return std::vector<float>(7, -2.0f); }, "global-qsgd:bits=4")) {
      EXPECT_EQ(y, -2.0f);
    }
    const float mean = n % 2 ? 2.0f / static_cast<float>(n) : 0.0f;
    for (float y : mean_of(n, [](int r) { return std::vector<float>(7, r % 2 ? -2.0f : 2.0f); },
                           "global-qsgd:bits=4")) {
      EXPECT_LE(std::abs(y - mean), (n - 1) * 2.0f / 7 + 1e-6f);
    }
  }
}

// Beyond 127 ranks 8-bit sums would overflow: the codec averages per step.
// On the ring the step that forms an average of k ranks rounds by a zero-mean
// error of variance <= 1/4 level^2, which reaches the final mean with weight
// k/n; quantization adds <= 1/(4n) level^2. The result is within 5 sd of the
// exact mean 1.5.
TEST(GlobalQsgdManyRanksTest, EightBitAtOneHundredThirtyRanksAverages) {
  constexpr int n = 130;
  const auto out = mean_of(n, [](int r) { return std::vector<float>(20, static_cast<float>(r % 4)); });
  const double level = 3.0 / 127;
  double variance = 1.0 / (4 * n);
  for (int k = 2; k <= n; ++k) variance += (static_cast<double>(k) / n) * (static_cast<double>(k) / n) / 4;
  for (float y : out) EXPECT_NEAR(y, 1.5, 5 * level * std::sqrt(variance));
}

TEST(GlobalQsgdExtremesTest, AllAtPlusOrMinusMaxNeitherWrapsNorOverflows) {
  for (int n : {2, 4, 7, 8}) {
    const int s = linear_levels_per_rank(8, n);
    for (float sign : {1.0f, -1.0f}) {
      const float m = 3.5f * sign;
      const auto out = mean_of(n, [&](int) { return std::vector<float>(257, m); });
      for (float y : out) {
        ASSERT_TRUE(std::isfinite(y));
        EXPECT_EQ(std::signbit(y), std::signbit(m)) << "sum wrapped around";
        EXPECT_LE(std::abs(y - m), std::abs(m) / s + 1e-6f);
      }
    }
  }
}

TEST(GlobalQsgdExtremesTest, AlternatingSignsZerosAndTinyValues) {
  // Alternating signs across ranks: the mean is 0 for an even rank count.
  const auto alternating = mean_of(4, [](int r) { return std::vector<float>(100, r % 2 ? -2.0f : 2.0f); });
  for (float y : alternating) EXPECT_LE(std::abs(y), 2.0f / 31 + 1e-6f);
  // All zeros: exactly zero (the zero-norm path).
  for (float y : mean_of(3, [](int) { return std::vector<float>(50, 0.0f); })) EXPECT_EQ(y, 0.0f);
  // Tiny values beside a large one, and a vector of only tiny values (where
  // s/norm overflows fp32): finite results, no NaN.
  const auto mixed = mean_of(3, [](int r) {
    std::vector<float> v(64, 1e-30f);
    if (r == 0) v[5] = 1.0f;
    return v;
  });
  for (float y : mixed) ASSERT_TRUE(std::isfinite(y));
  const auto tiny = mean_of(3, [](int) {
    std::vector<float> v(64, 1e-38f);
    v[0] = 0.0f;
    return v;
  });
  EXPECT_EQ(tiny[0], 0.0f);
  for (std::size_t i = 1; i < tiny.size(); ++i) {
    ASSERT_TRUE(std::isfinite(tiny[i]));
    EXPECT_LE(std::abs(tiny[i] - 1e-38f), 1e-38f / 42 + 1e-44f);
  }
}

TEST(GlobalQsgdInputTest, NonFiniteInputIsRaisedOnEveryRankNamingTheRank) {
  std::atomic<int> raised{0};
  run_world(4, [&](Communicator& comm) {
    auto codec = make_codec("global-qsgd", {.seed = 1, .bucket = 12});
    std::vector<float> data(32, 1.0f);
    if (comm.rank() == 2) data[7] = std::numeric_limits<float>::quiet_NaN();
    try {
      codec->allreduce_mean(comm, data);
    } catch (const InvalidArgument& e) {
      ++raised;
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("rank(s) 2"));
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("bucket 12"));
    }
    // Nothing was communicated: the communicator is still usable.
    std::vector<float> ok(32, 1.0f);
    codec->allreduce_mean(comm, ok);
    for (float y : ok) EXPECT_NEAR(y, 1.0f, 1.0f / 31);
  });
  EXPECT_EQ(raised.load(), 4);
}

TEST(GlobalQsgdReproducibilityTest, SameSeedSameResultOtherSeedOtherResult) {
  auto run = [](std::uint64_t seed, std::uint64_t step) {
    std::vector<float> result;
    run_world(3, [&](Communicator& comm) {
      auto codec = make_codec("global-qsgd:norm=2", {.seed = seed});
      codec->set_step(step);
      auto data = input_of(comm.rank(), 500);
      codec->allreduce_mean(comm, data);
      if (comm.rank() == 0) result = data;
    });
    return result;
  };
  EXPECT_EQ(run(11, 0), run(11, 0));
  EXPECT_NE(run(11, 0), run(12, 0));
  EXPECT_NE(run(11, 0), run(11, 1));
}

TEST(GlobalQsgdArgumentTest, CodecsThatDifferAcrossRanksAreAMismatch) {
  const auto message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto codec = make_codec(comm.rank() == 0 ? "global-qsgd:norm=inf" : "global-qsgd:norm=2");
    std::vector<float> data(16, 1.0f);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, ::testing::HasSubstr("ranks disagree on 'codec'"));
  EXPECT_THAT(message, ::testing::HasSubstr("norm=inf"));
}

}  // namespace
}  // namespace qccl::test
