// The test problems of the Q-GenX experiments (Q-GenX §2, §4): two-player
// zero-sum games min_x max_y f(x, y) with quadratic f, as variational
// inequalities on z = (x, y) ∈ R^{2n} with A(z) = (∇_x f, −∇_y f). Each
// problem is drawn from a seed, with a known solution z* (the offset is set
// to −M·z*), so the gap and the distance to the solution are exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/experiments/qgenx/operator.h"

namespace qccl::vi {

struct Problem {
  std::string name;         // "bilinear" or "quadratic"
  std::string description;  // the settings, for reports
  AffineOperator op;
  std::vector<double> solution;  // z*, A(z*) = 0 up to rounding
  // The players' blocks: [0, split) is x, [split, dimension) is y.
  std::size_t split = 0;
  OperatorConstants constants;
};

// f(x, y) = (α/2)‖x‖² + xᵀB·y + bᵀx − (α/2)‖y‖² − cᵀy, so
// A(x, y) = (αx + B·y + b, αy − Bᵀx + c), M = [[αI, B], [−Bᵀ, αI]].
// B = U·diag(s)·Vᵀ with random orthogonal U, V and singular values s
// evenly spaced in [singular_min, singular_max]. α = 0 is the plain bilinear
// game: monotone (M is skew) but not co-coercive. α > 0 makes it
// α-strongly monotone and β-co-coercive (Assumption 4) with
// β = α / (α² + s_max²): zᵀMz = α‖z‖² and ‖Mz‖² = α²‖z‖² + ‖Kz‖² for the
// skew part K, whose norm is s_max.
struct BilinearSettings {
  std::size_t n = 16;  // each player's dimension
  double regularization = 0;  // α ≥ 0
  double singular_min = 0.5, singular_max = 1.0;
  double solution_scale = 1.0;  // z* has i.i.d. N(0, scale²/(2n)) entries: E‖z*‖² = scale²
  std::uint64_t seed = 0;
};
Problem make_bilinear_game(const BilinearSettings& settings);

// f(x, y) = ½xᵀP·x + xᵀB·y − ½yᵀQ·y + bᵀx − cᵀy, a convex–concave quadratic
// saddle problem: A(x, y) = (P·x + B·y + b, Q·y − Bᵀx + c),
// M = [[P, B], [−Bᵀ, Q]], S = diag(P, Q). P = μI + W·diag(p)·Wᵀ with `rank`
// non-zero p evenly spaced in (0, curvature] (Q likewise, independent W).
// μ > 0: strongly monotone; μ = 0 and rank < n: merely monotone (S is
// singular and the coupling B turns its null space, so no co-coercivity).
struct QuadraticSettings {
  std::size_t n = 16;
  double strong_monotonicity = 0;  // μ ≥ 0
  std::size_t rank = 8;            // of P − μI and Q − μI, at most n
  double curvature = 1.0;
  double singular_min = 0.5, singular_max = 1.0;
  double solution_scale = 1.0;
  std::uint64_t seed = 0;
};
Problem make_quadratic_game(const QuadraticSettings& settings);

}  // namespace qccl::vi
