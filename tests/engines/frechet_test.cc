// The Fréchet distance of the GAN experiment (engines/frechet.h): zero for
// one set against itself, the closed forms for Gaussians, symmetry, and the
// moment sums it is computed from.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qccl/common/errors.h"
#include "qccl/experiments/gan/frechet.h"

namespace qccl::engines {
namespace {

GaussianStats gaussian(std::vector<double> mean, std::vector<double> covariance) {
  GaussianStats s;
  s.dim = mean.size();
  s.count = 1000;
  s.mean = std::move(mean);
  s.covariance = std::move(covariance);
  return s;
}

// A random symmetric positive definite n × n matrix: B·Bᵀ + 0.1·I.
std::vector<double> random_spd(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> b(n * n), a(n * n, 0.0);
  for (double& x : b) x = normal(rng);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < n; ++k) a[i * n + j] += b[i * n + k] * b[j * n + k];
    }
    a[i * n + i] += 0.1;
  }
  return a;
}

TEST(SymmetricEigen, ReconstructsTheMatrixWithOrthonormalVectors) {
  std::mt19937_64 rng(1);
  const std::size_t n = 12;
  const auto a = random_spd(n, rng);
  std::vector<double> values, vectors;
  symmetric_eigen(a, n, values, vectors);
  EXPECT_TRUE(std::is_sorted(values.begin(), values.end()));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double rebuilt = 0, dot = 0;
      for (std::size_t k = 0; k < n; ++k) {
        rebuilt += vectors[i * n + k] * values[k] * vectors[j * n + k];
        dot += vectors[k * n + i] * vectors[k * n + j];
      }
      EXPECT_NEAR(rebuilt, a[i * n + j], 1e-10);
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12);
    }
  }
}

TEST(FrechetDistance, ZeroForOneSetAgainstItself) {
  std::mt19937_64 rng(2);
  std::normal_distribution<float> normal;
  MomentSums sums(16);
  std::vector<float> features(300 * 16);
  for (float& f : features) f = normal(rng) * 3 + 1;
  sums.add(features, 300);
  const auto s = sums.stats();
  EXPECT_NEAR(frechet_distance(s, s), 0.0, 1e-9);
}

// Diagonal covariances commute: FD = ‖μ_a − μ_b‖² + Σ_i (√a_i − √b_i)².
TEST(FrechetDistance, DiagonalGaussiansHaveTheClosedForm) {
  const auto a = gaussian({1, 2, 3}, {4, 0, 0, 0, 9, 0, 0, 0, 0.25});
  const auto b = gaussian({0, 2, 5}, {1, 0, 0, 0, 16, 0, 0, 0, 1});
  const double expected = (1 + 0 + 4) + (1 + 1 + 0.25);
  EXPECT_NEAR(frechet_distance(a, b), expected, 1e-12);
}

// For 2 × 2 matrices, Tr(M^½) = √(Tr M + 2√det M), and Σ_a^½ Σ_b Σ_a^½ has
// the trace Tr(Σ_a Σ_b) and the determinant det Σ_a · det Σ_b: a closed
// form for covariances that do not commute.
TEST(FrechetDistance, NonCommutingTwoByTwoCovariancesHaveTheClosedForm) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const auto ca = random_spd(2, rng), cb = random_spd(2, rng);
    const auto a = gaussian({0.5, -1}, ca), b = gaussian({2, 0.25}, cb);
    const double trace_ab = ca[0] * cb[0] + ca[1] * cb[2] + ca[2] * cb[1] + ca[3] * cb[3];
    const double det_a = ca[0] * ca[3] - ca[1] * ca[2], det_b = cb[0] * cb[3] - cb[1] * cb[2];
    const double expected = (1.5 * 1.5 + 1.25 * 1.25) + ca[0] + ca[3] + cb[0] + cb[3] -
                            2 * std::sqrt(trace_ab + 2 * std::sqrt(det_a * det_b));
    EXPECT_NEAR(frechet_distance(a, b), expected, 1e-9 * (1 + expected));
  }
}

TEST(FrechetDistance, SymmetricInItsArguments) {
  std::mt19937_64 rng(4);
  const std::size_t n = 20;
  std::vector<double> ma(n), mb(n);
  std::normal_distribution<double> normal;
  for (std::size_t i = 0; i < n; ++i) {
    ma[i] = normal(rng);
    mb[i] = normal(rng);
  }
  const auto a = gaussian(ma, random_spd(n, rng)), b = gaussian(mb, random_spd(n, rng));
  const double ab = frechet_distance(a, b), ba = frechet_distance(b, a);
  EXPECT_GT(ab, 1.0);
  EXPECT_NEAR(ab, ba, 1e-9 * ab);
}

TEST(MomentSums, MeanAndUnbiasedCovarianceOfAKnownSet) {
  MomentSums sums(2);
  const std::vector<float> first{1, 2, 3, 4}, second{5, 0};
  sums.add(first, 2);
  sums.add(second, 1);
  const auto s = sums.stats();
  EXPECT_DOUBLE_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.mean[0], 3);
  EXPECT_DOUBLE_EQ(s.mean[1], 2);
  // x: 1, 3, 5 → variance 4; y: 2, 4, 0 → variance 4; covariance (−2·0 + 0·2 + 2·(−2))/2 = −2.
  EXPECT_NEAR(s.covariance[0], 4, 1e-12);
  EXPECT_NEAR(s.covariance[3], 4, 1e-12);
  EXPECT_NEAR(s.covariance[1], -2, 1e-12);
  EXPECT_NEAR(s.covariance[2], -2, 1e-12);
  EXPECT_THROW(sums.add(first, 3), InvalidArgument);
  EXPECT_THROW(MomentSums(2).stats(), InvalidArgument);
  EXPECT_THROW(frechet_distance(s, gaussian({0}, {1})), InvalidArgument);
}

}  // namespace
}  // namespace qccl::engines
