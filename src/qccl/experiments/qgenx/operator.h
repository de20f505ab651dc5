// Monotone operators for variational inequalities (Q-GenX §2): find x* with
// ⟨A(x*), x − x*⟩ ≥ 0 for all x, where A : R^d → R^d is monotone,
// ⟨A(x) − A(x'), x − x'⟩ ≥ 0. Deterministic and in fp64; the stochastic
// oracles that add noise to A are in oracle.h.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "qccl/experiments/qgenx/dense.h"

namespace qccl::vi {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual std::size_t dimension() const = 0;
  // out = A(x); out and x have dimension() elements and do not overlap.
  virtual void apply(std::span<const double> x, std::span<double> out) const = 0;
};

// A(x) = M·x + m. Every problem here is affine: a game whose players'
// losses are quadratic has an affine gradient field (the "pseudo-gradient"),
// and the gap function then has an exact maximiser (gap.h).
class AffineOperator final : public Operator {
 public:
  AffineOperator(Matrix matrix, std::vector<double> offset);

  std::size_t dimension() const override { return matrix_.n; }
  void apply(std::span<const double> x, std::span<double> out) const override;

  const Matrix& matrix() const { return matrix_; }
  std::span<const double> offset() const { return offset_; }

 private:
  Matrix matrix_;
  std::vector<double> offset_;
};

// Constants of an affine operator, from the eigen-decomposition of its
// symmetric part S = (M + Mᵀ)/2 (the operator is monotone iff S ⪰ 0, since
// ⟨A(x) − A(x'), x − x'⟩ = zᵀSz with z = x − x').
struct OperatorConstants {
  double lipschitz = 0;            // ‖M‖₂
  double strong_monotonicity = 0;  // λ_min(S): μ in ⟨A(x)−A(x'), x−x'⟩ ≥ μ‖x−x'‖²
  // β of Assumption 4, ⟨A(x)−A(x'), x−x'⟩ ≥ β‖A(x)−A(x')‖², the largest
  // such β; 0 when none exists. For an affine operator β = min over z with
  // Mz ≠ 0 of zᵀSz/‖Mz‖²: 0 unless null(S) ⊆ null(M), else
  // 1/λ_max(S^{+½}·MᵀM·S^{+½}) on the range of S.
  double cocoercivity = 0;
};
OperatorConstants operator_constants(const AffineOperator& op);

}  // namespace qccl::vi
