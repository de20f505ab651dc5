// The restricted gap function (Q-GenX §2, Eq. Gap) against brute force:
// a fine grid over a 2-dimensional domain (the error bound follows from the
// objective's Lipschitz constant and the grid spacing), random sampling and
// projected gradient ascent in higher dimension; ≥ 0 on the domain, 0 at the
// solution, and the skew closed form R‖A(x)‖.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/gap.h"
#include "qccl/experiments/qgenx/problems.h"
#include "vi_test_helpers.h"

namespace qccl::vi {
namespace {

// ⟨A(x'), x − x'⟩, the function the gap maximises over x'.
double objective(const AffineOperator& op, std::span<const double> x, std::span<const double> xp) {
  std::vector<double> a(op.dimension());
  op.apply(xp, a);
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * (x[i] - xp[i]);
  return sum;
}

std::vector<double> offset_point(const Problem& p, std::uint64_t index, double scale) {
  std::vector<double> x = p.solution;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += scale * standard_normal(5, 200 + index, i);
  return x;
}

struct GridCase {
  Problem problem;
  DomainShape shape;
  std::vector<double> center_shift;
};

// d = 2: every grid point of the domain (spacing h) is ≤ the gap, and the
// best is within L_f·h/√2 of it, L_f = sup ‖∇_{x'} objective‖ over the
// domain ≤ ‖A(c)‖ + ‖M‖(‖e‖ + 2·R√2) (e = x − c, R√2 bounds ‖z‖ on the box).
TEST(ViGap, MatchesAGridOverTwoDimensionalDomains) {
  std::vector<GridCase> cases;
  for (double alpha : {0.0, 0.4}) {
    for (DomainShape shape : {DomainShape::ball, DomainShape::box}) {
      cases.push_back({bilinear(1, alpha, 3), shape, {0, 0}});
      cases.push_back({bilinear(1, alpha, 4), shape, {0.3, -0.2}});
    }
  }
  cases.push_back({quadratic(1, 0.1, 1, 6, 2),
                   DomainShape::ball, {0.1, 0.2}});
  cases.push_back({quadratic(1, 0, 1, 8, 3),
                   DomainShape::ball, {0, 0}});
  constexpr double kRadius = 0.8;
  constexpr int kSteps = 400;
  for (const GridCase& c : cases) {
    TestDomain domain{c.shape, c.problem.solution, kRadius};
    for (std::size_t i = 0; i < 2; ++i) domain.center[i] += c.center_shift[i];
    const GapFunction gap(c.problem.op, domain);
    for (std::uint64_t k = 0; k < 4; ++k) {
      // Near and far points: maximisers inside and on the boundary.
      const auto x = offset_point(c.problem, k, k % 2 == 0 ? 0.05 : 2.0);
      const double value = gap(x);
      const double h = 2 * kRadius / kSteps;
      double best = -INFINITY;
      std::vector<double> xp(2);
      for (int i = 0; i <= kSteps; ++i) {
        for (int j = 0; j <= kSteps; ++j) {
          const double z0 = -kRadius + i * h, z1 = -kRadius + j * h;
          if (c.shape == DomainShape::ball && z0 * z0 + z1 * z1 > kRadius * kRadius) continue;
          xp[0] = domain.center[0] + z0;
          xp[1] = domain.center[1] + z1;
          best = std::max(best, objective(c.problem.op, x, xp));
        }
      }
      std::vector<double> ac(2), e{x[0] - domain.center[0], x[1] - domain.center[1]};
      c.problem.op.apply(domain.center, ac);
      const double lipschitz = std::sqrt(squared_norm(ac)) +
                               c.problem.constants.lipschitz *
                                   (std::sqrt(squared_norm(e)) + 2 * kRadius * std::sqrt(2.0));
      EXPECT_LE(best, value + 1e-12 * (1 + std::abs(value))) << gap.method() << " " << c.problem.description;
      EXPECT_GE(best, value - lipschitz * h / std::sqrt(2.0)) << gap.method() << " " << c.problem.description;
    }
  }
}

// d = 12, trust region (a merely monotone quadratic game) and the skew and
// scalar closed forms: the maximiser lies in the domain and attains the
// value; no random point of the domain does better; projected gradient
// ascent (step 1/(2‖S‖), 20000 steps) reaches the same value.
TEST(ViGap, MaximiserAttainsItAndNothingBeatsIt) {
  std::vector<Problem> problems;
  problems.push_back(quadratic(6, 0, 3, 12));
  problems.push_back(quadratic(6, 0.05, 6, 13));
  problems.push_back(bilinear(6, 0.0, 14));
  problems.push_back(bilinear(6, 0.3, 15));
  constexpr double kRadius = 1.5;
  for (const Problem& p : problems) {
    const std::size_t d = p.op.dimension();
    const GapFunction gap(p.op, {DomainShape::ball, p.solution, kRadius});
    for (std::uint64_t k = 0; k < 6; ++k) {
      const auto x = offset_point(p, k, k % 2 == 0 ? 0.02 : 1.0);
      const GapValue g = gap.evaluate(x);
      std::vector<double> z(d);
      for (std::size_t i = 0; i < d; ++i) z[i] = g.maximizer[i] - p.solution[i];
      EXPECT_LE(std::sqrt(squared_norm(z)), kRadius * (1 + 1e-12));
      EXPECT_NEAR(objective(p.op, x, g.maximizer), g.value, 1e-12 * (1 + std::abs(g.value)));
      std::vector<double> xp(d);
      for (std::uint64_t s = 0; s < 2000; ++s) {
        double norm2 = 0;
        for (std::size_t i = 0; i < d; ++i) {
          z[i] = standard_normal(9, 1000 * k + s, i);
          norm2 += z[i] * z[i];
        }
        const double radius = kRadius * std::pow(uniform01(9, 1000 * k + s, d), 1.0 / static_cast<double>(d));
        for (std::size_t i = 0; i < d; ++i) xp[i] = p.solution[i] + z[i] / std::sqrt(norm2) * radius;
        ASSERT_LE(objective(p.op, x, xp), g.value + 1e-12 * (1 + std::abs(g.value)));
      }
      // Projected gradient ascent on x' ↦ ⟨A(x'), x − x'⟩, gradient Mᵀ(x − x') − A(x').
      std::vector<double> y = p.solution, a(d), grad(d), diff(d);
      const double step = 1.0 / (2.0 * p.constants.lipschitz);
      for (int it = 0; it < 20000; ++it) {
        p.op.apply(y, a);
        for (std::size_t i = 0; i < d; ++i) diff[i] = x[i] - y[i];
        multiply_transposed(p.op.matrix(), diff, grad);
        double norm2 = 0;
        for (std::size_t i = 0; i < d; ++i) {
          y[i] += step * (grad[i] - a[i]);
          norm2 += (y[i] - p.solution[i]) * (y[i] - p.solution[i]);
        }
        if (norm2 > kRadius * kRadius) {
          const double shrink = kRadius / std::sqrt(norm2);
          for (std::size_t i = 0; i < d; ++i) y[i] = p.solution[i] + (y[i] - p.solution[i]) * shrink;
        }
      }
      EXPECT_NEAR(objective(p.op, x, y), g.value, 1e-7 * (1 + std::abs(g.value))) << p.description;
    }
  }
}

// Bilinear (skew) game on a ball around z*: Gap = R‖A(x)‖ exactly.
TEST(ViGap, SkewClosedFormIsRadiusTimesOperatorNorm) {
  const Problem p = bilinear(10, 0, 21);
  const GapFunction gap(p.op, {DomainShape::ball, p.solution, 2.5});
  EXPECT_EQ(gap.method(), "skew");
  std::vector<double> a(p.op.dimension());
  for (std::uint64_t k = 0; k < 10; ++k) {
    const auto x = offset_point(p, k, 0.5);
    p.op.apply(x, a);
    EXPECT_NEAR(gap(x), 2.5 * std::sqrt(squared_norm(a)), 1e-12);
  }
}

// Proposition 1: Gap ≥ 0 on a domain holding a solution, 0 at the solution.
TEST(ViGap, NonNegativeAndZeroAtTheSolution) {
  for (const Problem& p : {bilinear(5, 0, 31),
                           bilinear(5, 0.2, 32),
                           quadratic(5, 0, 2, 33)}) {
    for (DomainShape shape : {DomainShape::ball, DomainShape::box}) {
      if (shape == DomainShape::box && p.name != "bilinear") continue;
      const GapFunction gap(p.op, {shape, p.solution, 1.0});
      EXPECT_LE(std::abs(gap(p.solution)), 1e-13) << p.description;
      for (std::uint64_t k = 0; k < 50; ++k) {
        EXPECT_GE(gap(offset_point(p, k, 0.3)), 0.0) << p.description;
      }
    }
  }
}

TEST(ViGap, RejectsWhatItCannotComputeExactly) {
  const Problem q = quadratic(3, 0, 2, 1);
  EXPECT_THROW(GapFunction(q.op, {DomainShape::box, q.solution, 1.0}), InvalidArgument);
  EXPECT_THROW(GapFunction(q.op, {DomainShape::ball, q.solution, 0.0}), InvalidArgument);
  EXPECT_THROW(GapFunction(q.op, {DomainShape::ball, {1.0}, 1.0}), InvalidArgument);
  Matrix m(2);
  m(0, 0) = -1;  // not monotone
  const AffineOperator bad(m, {0, 0});
  EXPECT_THROW(GapFunction(bad, {DomainShape::ball, {0, 0}, 1.0}), InvalidArgument);
  const GapFunction gap(q.op, {DomainShape::ball, q.solution, 1.0});
  EXPECT_THROW(gap(std::vector<double>(5)), InvalidArgument);
}

}  // namespace
}  // namespace qccl::vi
