// The variational-inequality problems and their oracles (Q-GenX §2):
// monotonicity and co-coercivity on random pairs, the constants against
// their closed forms, exact solutions, unbiased oracles at 5σ, relative
// noise vanishing at the solution, and reproducible draws.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/oracle.h"
#include "qccl/experiments/qgenx/problems.h"
#include "vi_test_helpers.h"

namespace qccl::vi {
namespace {

std::vector<double> random_point(std::size_t d, std::uint64_t seed, std::uint64_t index, double scale) {
  std::vector<double> x(d);
  for (std::size_t i = 0; i < d; ++i) x[i] = scale * standard_normal(seed, 100 + index, i);
  return x;
}

std::vector<Problem> problems() {
  std::vector<Problem> all;
  all.push_back(bilinear(8, 0, 1));
  all.push_back(bilinear(8, 0.1, 2));
  all.push_back(quadratic(8, 0, 4, 3));
  all.push_back(quadratic(8, 0.2, 8, 4));
  return all;
}

// ⟨A(x) − A(x'), x − x'⟩ ≥ μ‖x − x'‖² and ≥ β‖A(x) − A(x')‖² on random
// pairs, with the constants operator_constants() reports (to rounding).
TEST(ViProblems, MonotoneAndCocoerciveOnRandomPairs) {
  for (const Problem& p : problems()) {
    const std::size_t d = p.op.dimension();
    std::vector<double> ax(d), ay(d);
    for (std::uint64_t k = 0; k < 500; ++k) {
      const auto x = random_point(d, 7, 2 * k, 3.0), y = random_point(d, 7, 2 * k + 1, 3.0);
      p.op.apply(x, ax);
      p.op.apply(y, ay);
      double inner = 0, dist2 = 0, image2 = 0;
      for (std::size_t i = 0; i < d; ++i) {
        inner += (ax[i] - ay[i]) * (x[i] - y[i]);
        dist2 += (x[i] - y[i]) * (x[i] - y[i]);
        image2 += (ax[i] - ay[i]) * (ax[i] - ay[i]);
      }
      const double slack = 1e-10 * (dist2 + image2);
      EXPECT_GE(inner, p.constants.strong_monotonicity * dist2 - slack) << p.description;
      EXPECT_GE(inner, p.constants.cocoercivity * image2 - slack) << p.description;
    }
  }
}

// α-regularised bilinear game: μ = α, ‖M‖ = √(α² + s_max²) and
// β = α/(α² + s_max²) (problems.h); α = 0 is not co-coercive.
TEST(ViProblems, BilinearConstantsMatchClosedForms) {
  for (double alpha : {0.0, 0.05, 0.5}) {
    const Problem p = bilinear(6, alpha, 9, 1.5);
    const double l2 = alpha * alpha + 1.5 * 1.5;
    EXPECT_NEAR(p.constants.lipschitz, std::sqrt(l2), 1e-9);
    EXPECT_NEAR(p.constants.strong_monotonicity, alpha, 1e-9);
    EXPECT_NEAR(p.constants.cocoercivity, alpha / l2, 1e-9) << "alpha " << alpha;
  }
}

// Merely monotone quadratic game: S singular and turned by B, so μ = 0
// and no co-coercivity; μ > 0 shows up as the smallest eigenvalue.
TEST(ViProblems, QuadraticGameConstants) {
  const Problem merely = quadratic(6, 0, 3, 5);
  EXPECT_NEAR(merely.constants.strong_monotonicity, 0.0, 1e-12);
  EXPECT_EQ(merely.constants.cocoercivity, 0.0);
  const Problem strong = quadratic(6, 0.25, 3, 5);
  EXPECT_NEAR(strong.constants.strong_monotonicity, 0.25, 1e-12);
  EXPECT_GT(strong.constants.cocoercivity, 0.0);
}

TEST(ViProblems, SolutionIsExact) {
  for (const Problem& p : problems()) {
    std::vector<double> a(p.op.dimension());
    p.op.apply(p.solution, a);
    EXPECT_LT(std::sqrt(squared_norm(a)), 1e-13) << p.description;
    EXPECT_GT(std::sqrt(squared_norm(p.solution)), 0.1) << "a trivial solution: " << p.description;
  }
}

TEST(ViProblems, RejectsBadSettings) {
  EXPECT_THROW(bilinear(0, 0, 0), InvalidArgument);
  EXPECT_THROW(bilinear(16, -1, 0), InvalidArgument);
  EXPECT_THROW(quadratic(4, 0, 5, 0), InvalidArgument);
  EXPECT_THROW(bilinear(16, 0, 0, 1, 1.0, 2), InvalidArgument);
}

struct OracleCase {
  NoiseSettings noise;
  const char* name;
};

void PrintTo(const OracleCase& c, std::ostream* out) { *out << c.name; }

class ViOracle : public ::testing::TestWithParam<OracleCase> {};

// E[g(x; ω)] = A(x) per coordinate within 5σ (σ² = the coordinate's exact
// variance / N), and the mean of ‖U‖² within 5 sample standard errors of
// noise_variance(x).
TEST_P(ViOracle, UnbiasedWithTheStatedVariance) {
  const Problem p = bilinear(8, 0.1, 11);
  const NoiseSettings noise = GetParam().noise;
  const StochasticOracle oracle(p.op, noise, 21, p.split);
  const std::size_t d = p.op.dimension();
  const auto x = random_point(d, 3, 0, 2.0);
  std::vector<double> a(d), g(d), sum(d, 0.0);
  p.op.apply(x, a);
  constexpr int kDraws = 20000;
  double u2_sum = 0, u2_sq = 0;
  for (int k = 0; k < kDraws; ++k) {
    oracle.sample(x, k % 4, static_cast<std::uint64_t>(k / 4), g);
    double u2 = 0;
    for (std::size_t i = 0; i < d; ++i) {
      sum[i] += g[i];
      u2 += (g[i] - a[i]) * (g[i] - a[i]);
    }
    u2_sum += u2;
    u2_sq += u2 * u2;
  }
  for (std::size_t i = 0; i < d; ++i) {
    double variance = 0;  // of one draw of coordinate i
    switch (noise.kind) {
      case NoiseKind::absolute: {
        const double half_width = noise.sigma * std::sqrt(3.0 / static_cast<double>(d));
        variance = half_width * half_width / 3.0;
        break;
      }
      case NoiseKind::coordinates: variance = a[i] * a[i] * (1.0 / noise.keep - 1.0); break;
      case NoiseKind::players: variance = a[i] * a[i]; break;
      case NoiseKind::none: break;
    }
    EXPECT_NEAR(sum[i] / kDraws, a[i], 5.0 * std::sqrt(variance / kDraws) + 1e-12) << "coordinate " << i;
  }
  const double mean_u2 = u2_sum / kDraws;
  const double sd_u2 = std::sqrt(std::max(0.0, u2_sq / kDraws - mean_u2 * mean_u2));
  EXPECT_NEAR(mean_u2, oracle.noise_variance(x), 5.0 * sd_u2 / std::sqrt(kDraws) + 1e-9);
}

// Relative noise (Assumption 3) vanishes at the solution; absolute does not.
TEST_P(ViOracle, RelativeNoiseVanishesAtTheSolution) {
  const Problem p = bilinear(8, 0.1, 11);
  const StochasticOracle oracle(p.op, GetParam().noise, 21, p.split);
  std::vector<double> g(p.op.dimension());
  double largest = 0;
  for (std::uint64_t call = 0; call < 50; ++call) {
    oracle.sample(p.solution, 1, call, g);
    largest = std::max(largest, std::sqrt(squared_norm(g)));
  }
  if (GetParam().noise.relative()) {
    EXPECT_LT(largest, 1e-12);
    EXPECT_LT(oracle.noise_variance(p.solution), 1e-24);
  } else {
    EXPECT_GT(largest, 0.1 * GetParam().noise.sigma);
  }
}

// Draws are a function of (seed, rank, call) alone (20 calls, so that even
// the players' one bit per draw tells the keys apart).
TEST_P(ViOracle, DrawsAreKeyedBySeedRankAndCall) {
  const Problem p = bilinear(8, 0, 11);
  const StochasticOracle oracle(p.op, GetParam().noise, 21, p.split);
  const StochasticOracle other_seed(p.op, GetParam().noise, 22, p.split);
  const std::size_t d = p.op.dimension();
  const auto x = random_point(d, 3, 1, 1.0);
  const auto draws = [&](const StochasticOracle& o, int rank, std::uint64_t first) {
    std::vector<double> all, g(d);
    for (std::uint64_t call = first; call < first + 20; ++call) {
      o.sample(x, rank, call, g);
      all.insert(all.end(), g.begin(), g.end());
    }
    return all;
  };
  EXPECT_EQ(draws(oracle, 2, 0), draws(oracle, 2, 0));
  EXPECT_NE(draws(oracle, 2, 0), draws(oracle, 3, 0));
  EXPECT_NE(draws(oracle, 2, 0), draws(oracle, 2, 20));
  EXPECT_NE(draws(oracle, 2, 0), draws(other_seed, 2, 0));
}

INSTANTIATE_TEST_SUITE_P(
    Noise, ViOracle,
    ::testing::Values(OracleCase{{NoiseKind::absolute, 0.7, 0.5}, "absolute"},
                      OracleCase{{NoiseKind::coordinates, 0, 0.3}, "coordinates"},
                      OracleCase{{NoiseKind::players, 0, 0.5}, "players"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ViOracleSettings, RejectsBadNoise) {
  const Problem p = bilinear(4, 0, 0);
  EXPECT_THROW(StochasticOracle(p.op, {NoiseKind::coordinates, 0, 0.0}, 0, p.split), InvalidArgument);
  EXPECT_THROW(StochasticOracle(p.op, {NoiseKind::absolute, -1, 0.5}, 0, p.split), InvalidArgument);
  EXPECT_THROW(StochasticOracle(p.op, {NoiseKind::players, 0, 0.5}, 0, 0), InvalidArgument);
  EXPECT_THROW(parse_noise_kind("gaussian"), InvalidArgument);
}

}  // namespace
}  // namespace qccl::vi
