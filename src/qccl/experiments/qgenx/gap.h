// The restricted gap function (Q-GenX §2, Eq. Gap; Nesterov 2007, 2009):
//   Gap_C(x) = sup_{x' ∈ C} ⟨A(x'), x − x'⟩
// over a compact test domain C, here a ball or a box (cube) around a centre
// (the problems' solution). It is ≥ 0 on C when C holds a solution, zero
// exactly at solutions inside C (Proposition 1), and Theorems 3–4 bound it
// at the ergodic average of Q-GenX's half-step iterates.
//
// For an affine monotone operator A(x') = M·x' + m the supremum is exact.
// Write x' = c + z (c the centre, ‖z‖ ≤ R or |z_i| ≤ R) and e = x − c:
//   ⟨A(c) + M·z, e − z⟩ = ⟨A(c), e⟩ + gᵀz − zᵀS·z,  g = Mᵀe − A(c),
// S = (M + Mᵀ)/2 ⪰ 0: a concave quadratic in z.
// - S = 0 (a bilinear game): linear in z, so the sup is ⟨A(c), e⟩ + R‖g‖₂
//   on a ball (z = R·g/‖g‖) and ⟨A(c), e⟩ + R‖g‖₁ on a box (z_i = R·sign g_i).
//   At c = z* this is R‖A(x)‖ on the ball: Mᵀe = −M·e = −A(x) for skew M.
// - S = αI (a regularised bilinear game): separable; on a ball the
//   maximiser is g/(2α) if that lies inside (value ‖g‖²/(4α)), else
//   R·g/‖g‖ (value R‖g‖ − αR²); on a box the same per coordinate.
// - Otherwise, on a ball: the trust-region problem max gᵀz − zᵀSz,
//   ‖z‖ ≤ R, solved exactly in S's eigenbasis S = Q·diag(λ)·Qᵀ, h = Qᵀg:
//   z(μ) = Q·w(μ), w_i = h_i / (2(λ_i + μ)), with μ = 0 if that is inside
//   the ball, else the root μ > 0 of the secular equation ‖w(μ)‖ = R
//   (Moré & Sorensen 1983; ‖w(μ)‖ decreases in μ, and μ ≤ ‖h‖/(2R)), found
//   by bisection to the last bit. A box with such S has no closed form and
//   is refused.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "qccl/experiments/qgenx/operator.h"

namespace qccl::vi {

enum class DomainShape { ball, box };
std::string to_string(DomainShape shape);
DomainShape parse_domain_shape(std::string_view text);

struct TestDomain {
  DomainShape shape = DomainShape::ball;
  std::vector<double> center;
  double radius = 1.0;  // the ball's radius, or the box's half-width
};

struct GapValue {
  double value = 0;
  std::vector<double> maximizer;  // the x' ∈ C attaining the sup
};

class GapFunction {
 public:
  // InvalidArgument for a non-monotone operator, a centre of another
  // dimension, a radius ≤ 0, or a box around an operator whose symmetric
  // part is not 0 or αI.
  GapFunction(const AffineOperator& op, TestDomain domain);

  double operator()(std::span<const double> x) const { return evaluate(x).value; }
  GapValue evaluate(std::span<const double> x) const;
  // "skew", "scalar" (S = αI) or "trust region": which case applies.
  const std::string& method() const { return method_; }
  const TestDomain& domain() const { return domain_; }

 private:
  enum class Case { skew, scalar, trust_region };
  // max gᵀz − zᵀSz over the domain's z (centred at 0); writes the maximiser.
  double maximize(std::span<const double> g, std::span<double> z) const;
  double maximize_trust_region(std::span<const double> g, std::span<double> z) const;

  const AffineOperator& op_;
  TestDomain domain_;
  Case case_ = Case::trust_region;
  double alpha_ = 0;  // S = αI
  std::string method_;
  std::vector<double> center_image_;  // A(c)
  SymmetricEigen eigen_;              // of S, trust region only
};

}  // namespace qccl::vi
