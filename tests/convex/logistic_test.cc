// Logistic regression: gradient and Hessian against finite differences and
// each other, the Newton reference optimum, and the gradient estimators
// (full = exact, minibatch and L-SVRG unbiased within 5σ).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "qccl/experiments/intsgd/estimators.h"
#include "qccl/experiments/intsgd/logistic.h"
#include "qccl/experiments/intsgd/synthetic.h"

namespace qccl::convex {
namespace {

std::vector<double> point(std::size_t d) {
  std::vector<double> x(d);
  for (std::size_t j = 0; j < d; ++j) x[j] = 0.3 * std::sin(1.0 + static_cast<double>(j));
  return x;
}

TEST(LogisticTest, LossIsStableAtExtremes) {
  EXPECT_NEAR(logistic_loss(0), std::log(2.0), 1e-15);
  EXPECT_NEAR(logistic_loss(800), 0.0, 1e-300);
  EXPECT_NEAR(logistic_loss(-800), 800.0, 1e-9);
}

TEST(LogisticTest, GradientAndHessianMatchFiniteDifferences) {
  const auto data = make_synthetic(60, 8, 1);
  const std::vector<std::size_t> starts{0, 25, 60};
  const auto f = LogisticObjective::federation(data, starts, 0.01);
  const auto x = point(8);
  std::vector<double> g(8), hv(8), v(8, 0.0);
  f.gradient(x, g);
  const auto h = f.hessian(x);
  for (std::size_t j = 0; j < 8; ++j) {
    auto plus = x, minus = x;
    plus[j] += 1e-6;
    minus[j] -= 1e-6;
    EXPECT_NEAR(g[j], (f.value(plus) - f.value(minus)) / 2e-6, 1e-8) << j;
    std::vector<double> gp(8), gm(8);
    f.gradient(plus, gp);
    f.gradient(minus, gm);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_NEAR(h[i * 8 + j], (gp[i] - gm[i]) / 2e-6, 1e-7) << i << "," << j;
    }
  }
  for (std::size_t j = 0; j < 8; ++j) v[j] = 1.0 + static_cast<double>(j);
  f.hessian_vector(x, v, hv);
  for (std::size_t i = 0; i < 8; ++i) {
    double expected = 0;
    for (std::size_t j = 0; j < 8; ++j) expected += h[i * 8 + j] * v[j];
    EXPECT_NEAR(hv[i], expected, 1e-12);
  }
}

// (1/n)Σ f_i with unequal shards equals the federation objective.
TEST(LogisticTest, FederationIsTheMeanOfTheShards) {
  const auto data = make_synthetic(50, 5, 2);
  const std::vector<std::size_t> starts{0, 17, 50};
  const auto all = LogisticObjective::federation(data, starts, 0.1);
  const auto a = LogisticObjective::shard(data, 0, 17, 0.1);
  const auto b = LogisticObjective::shard(data, 17, 33, 0.1);
  const auto x = point(5);
  EXPECT_NEAR(all.value(x), 0.5 * (a.value(x) + b.value(x)), 1e-14);
}

TEST(LogisticTest, NewtonReachesTheOptimum) {
  const auto data = make_synthetic(300, 20, 5);
  const std::vector<std::size_t> starts{0, 100, 200, 300};
  const auto f = LogisticObjective::federation(data, starts, 1e-3);
  std::vector<double> x;
  const double f_star = minimize(f, x);
  std::vector<double> g(20);
  f.gradient(x, g);
  double norm = 0;
  for (double v : g) norm += v * v;
  EXPECT_LT(std::sqrt(norm), 1e-13);
  EXPECT_NEAR(f_star, f.value(x), 1e-15);
  EXPECT_LT(f_star, f.value(point(20)));
  // L bounds: each sample's ‖a‖²/4 + λ (unit rows: 1/4 + λ) >= f's.
  EXPECT_NEAR(f.sample_smoothness(), 0.25 + 1e-3, 1e-12);
  EXPECT_LE(f.smoothness(), f.sample_smoothness() * 1.05 + 1e-12);
  EXPECT_GT(f.smoothness(), 1e-3);
}

// E[g] = ∇f_i(x): the mean of R estimates within 5 standard errors (sample
// standard deviation per coordinate).
void expect_unbiased(GradientEstimator& estimator, const LogisticObjective& f,
                     const std::vector<double>& x) {
  constexpr int kRounds = 4000;
  const std::size_t d = x.size();
  std::vector<double> exact(d), g(d), sum(d, 0.0), square(d, 0.0);
  f.gradient(x, exact);
  for (int k = 0; k < kRounds; ++k) {
    estimator.estimate(x, static_cast<std::uint64_t>(k), g);
    for (std::size_t j = 0; j < d; ++j) {
      sum[j] += g[j];
      square[j] += g[j] * g[j];
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    const double mean = sum[j] / kRounds;
    const double var = square[j] / kRounds - mean * mean;
    EXPECT_NEAR(mean, exact[j], 5 * std::sqrt(var / kRounds) + 1e-14) << j;
  }
}

TEST(EstimatorsTest, FullIsExactAndStochasticOnesAreUnbiased) {
  const auto data = make_synthetic(80, 6, 7);
  const auto f = LogisticObjective::shard(data, 0, 80, 0.01);
  const auto x = point(6);
  auto full = make_full_gradient(f);
  std::vector<double> g(6), exact(6);
  EXPECT_EQ(full->estimate(x, 0, g), 80u);
  f.gradient(x, exact);
  EXPECT_EQ(g, exact);
  auto minibatch = make_minibatch_gradient(f, 4, 3, 1);
  expect_unbiased(*minibatch, f, x);
  // L-SVRG: the first call sets w^0 = x^0 (m gradients) and spends 2τ on
  // the minibatch, plus m more when the coin moves w (probability p).
  auto lsvrg = make_lsvrg_gradient(f, 4, 0.05, 3, 1);
  std::vector<double> start(6, 0.0);
  const auto cost = lsvrg->estimate(start, 0, g);
  EXPECT_TRUE(cost == 88u || cost == 168u) << cost;
  expect_unbiased(*lsvrg, f, x);
  // With w = x the estimate is the full gradient.
  auto always = make_lsvrg_gradient(f, 4, 1.0, 3, 1);
  always->estimate(x, 0, g);  // moves w to x
  always->estimate(x, 1, g);
  for (std::size_t j = 0; j < 6; ++j) EXPECT_NEAR(g[j], exact[j], 1e-15);
}

}  // namespace
}  // namespace qccl::convex
