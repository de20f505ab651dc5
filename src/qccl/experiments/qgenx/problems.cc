#include "qccl/experiments/qgenx/problems.h"

#include <cmath>
#include <sstream>

#include "qccl/common/errors.h"

namespace qccl::vi {
namespace {

// Purposes of the generator's streams, so a problem's matrices are
// independent draws.
enum Purpose : std::uint64_t { kLeft = 1, kRight = 2, kSolution = 3, kCurvatureX = 4, kCurvatureY = 5 };

void check_common(std::size_t n, double singular_min, double singular_max, double scale) {
  if (n == 0) throw InvalidArgument("a game needs each player's dimension n >= 1");
  if (!(singular_min >= 0 && singular_max >= singular_min && std::isfinite(singular_max))) {
    throw InvalidArgument("the coupling's singular values need 0 <= min <= max, finite");
  }
  if (!(scale >= 0 && std::isfinite(scale))) throw InvalidArgument("the solution scale must be >= 0");
}

// `count` values evenly spaced in [low, high] (both ends included; one
// value: high).
std::vector<double> spaced(std::size_t count, double low, double high) {
  std::vector<double> values(count, high);
  for (std::size_t i = 0; count > 1 && i < count; ++i) {
    values[i] = low + (high - low) * static_cast<double>(i) / static_cast<double>(count - 1);
  }
  return values;
}

// B = U·diag(s)·Vᵀ.
Matrix coupling(std::size_t n, double low, double high, std::uint64_t seed) {
  const Matrix u = random_orthogonal(n, seed, kLeft);
  const Matrix v = random_orthogonal(n, seed, kRight);
  const auto s = spaced(n, low, high);
  Matrix b(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) sum += u(i, k) * s[k] * v(j, k);
      b(i, j) = sum;
    }
  }
  return b;
}

// M = [[P, B], [−Bᵀ, Q]].
Matrix game_matrix(const Matrix& p, const Matrix& b, const Matrix& q) {
  const std::size_t n = b.n;
  Matrix m(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      m(i, j) = p(i, j);
      m(i, n + j) = b(i, j);
      m(n + i, j) = -b(j, i);
      m(n + i, n + j) = q(i, j);
    }
  }
  return m;
}

// The problem with solution z* drawn from the seed and offset −M·z*.
Problem finish(std::string name, std::string description, Matrix m, std::size_t n, double scale,
               std::uint64_t seed) {
  std::vector<double> solution(2 * n), offset(2 * n);
  const double sd = scale / std::sqrt(static_cast<double>(2 * n));
  for (std::size_t i = 0; i < 2 * n; ++i) solution[i] = sd * standard_normal(seed, kSolution, i);
  multiply(m, solution, offset);
  for (double& v : offset) v = -v;
  AffineOperator op(std::move(m), std::move(offset));
  const OperatorConstants constants = operator_constants(op);
  return Problem{std::move(name), std::move(description), std::move(op), std::move(solution), n,
                 constants};
}

std::string number(double v) {
  std::ostringstream text;
  text << v;
  return text.str();
}

}  // namespace

Problem make_bilinear_game(const BilinearSettings& s) {
  check_common(s.n, s.singular_min, s.singular_max, s.solution_scale);
  if (!(s.regularization >= 0 && std::isfinite(s.regularization))) {
    throw InvalidArgument("the bilinear game's regularization alpha must be >= 0");
  }
  Matrix diagonal(s.n);
  for (std::size_t i = 0; i < s.n; ++i) diagonal(i, i) = s.regularization;
  const Matrix b = coupling(s.n, s.singular_min, s.singular_max, s.seed);
  std::string description = "bilinear game, n = " + std::to_string(s.n) + " per player, alpha = " +
                            number(s.regularization) + ", singular values [" +
                            number(s.singular_min) + ", " + number(s.singular_max) + "], seed " +
                            std::to_string(s.seed);
  return finish("bilinear", std::move(description), game_matrix(diagonal, b, diagonal), s.n,
                s.solution_scale, s.seed);
}

Problem make_quadratic_game(const QuadraticSettings& s) {
  check_common(s.n, s.singular_min, s.singular_max, s.solution_scale);
  if (s.rank > s.n) throw InvalidArgument("the quadratic game's curvature rank must be at most n");
  if (!(s.strong_monotonicity >= 0 && s.curvature >= 0 && std::isfinite(s.curvature) &&
        std::isfinite(s.strong_monotonicity))) {
    throw InvalidArgument("the quadratic game's mu and curvature must be >= 0");
  }
  // p_i evenly spaced in (0, curvature] for i < rank, then zeros.
  std::vector<double> curvatures(s.n, 0.0);
  for (std::size_t i = 0; i < s.rank; ++i) {
    curvatures[i] = s.curvature * static_cast<double>(i + 1) / static_cast<double>(s.rank);
  }
  const auto block = [&](std::uint64_t purpose) {
    Matrix p = from_eigen(random_orthogonal(s.n, s.seed, purpose), curvatures);
    for (std::size_t i = 0; i < s.n; ++i) p(i, i) += s.strong_monotonicity;
    return p;
  };
  const Matrix p = block(kCurvatureX), q = block(kCurvatureY);
  const Matrix b = coupling(s.n, s.singular_min, s.singular_max, s.seed);
  std::string description = "quadratic game, n = " + std::to_string(s.n) + " per player, mu = " +
                            number(s.strong_monotonicity) + ", curvature rank " +
                            std::to_string(s.rank) + " up to " + number(s.curvature) +
                            ", singular values [" + number(s.singular_min) + ", " +
                            number(s.singular_max) + "], seed " + std::to_string(s.seed);
  return finish("quadratic", std::move(description), game_matrix(p, b, q), s.n, s.solution_scale,
                s.seed);
}

}  // namespace qccl::vi
