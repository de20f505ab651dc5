#include "qccl/experiments/qgenx/gap.h"

#include <algorithm>
#include <cmath>

#include "qccl/common/errors.h"

namespace qccl::vi {

std::string to_string(DomainShape shape) { return shape == DomainShape::ball ? "ball" : "box"; }

DomainShape parse_domain_shape(std::string_view text) {
  if (text == "ball") return DomainShape::ball;
  if (text == "box") return DomainShape::box;
  throw InvalidArgument("unknown test domain '" + std::string(text) + "'; valid: ball, box");
}

namespace {

// Whether S is exactly αI (α = S_00); S = 0 is the case α = 0.
bool is_scalar(const Matrix& s, double& alpha) {
  alpha = s.n > 0 ? s(0, 0) : 0.0;
  for (std::size_t i = 0; i < s.n; ++i) {
    for (std::size_t j = 0; j < s.n; ++j) {
      if (s(i, j) != (i == j ? alpha : 0.0)) return false;
    }
  }
  return true;
}

// max over |t| ≤ R of g·t − α·t²: the unconstrained g/(2α) if inside,
// else R·sign(g).
double maximize_scalar(double g, double alpha, double radius, double& t) {
  if (alpha > 0 && std::abs(g) <= 2.0 * alpha * radius) {
    t = g / (2.0 * alpha);
    return g * g / (4.0 * alpha);
  }
  t = std::copysign(radius, g);
  return radius * std::abs(g) - alpha * radius * radius;
}

}  // namespace

GapFunction::GapFunction(const AffineOperator& op, TestDomain domain)
    : op_(op), domain_(std::move(domain)) {
  const std::size_t d = op.dimension();
  if (domain_.center.size() != d) {
    throw InvalidArgument("the gap's test domain is centred at a point of dimension " +
                          std::to_string(domain_.center.size()) + ", the operator's is " +
                          std::to_string(d));
  }
  if (!(domain_.radius > 0 && std::isfinite(domain_.radius))) {
    throw InvalidArgument("the gap's test domain needs a radius > 0");
  }
  const Matrix s = symmetric_part(op.matrix());
  if (is_scalar(s, alpha_)) {
    if (alpha_ < 0) throw InvalidArgument("the operator is not monotone (its symmetric part is negative)");
    case_ = alpha_ == 0 ? Case::skew : Case::scalar;
    method_ = alpha_ == 0 ? "skew" : "scalar";
  } else {
    if (domain_.shape == DomainShape::box) {
      throw InvalidArgument("the gap over a box is exact only for operators whose symmetric part "
                            "is 0 or a multiple of I (bilinear games); use a ball");
    }
    eigen_ = symmetric_eigen(s);
    const double largest = std::max(std::abs(eigen_.values.front()), std::abs(eigen_.values.back()));
    if (eigen_.values.front() < -1e-12 * std::max(1.0, largest)) {
      throw InvalidArgument("the operator is not monotone: its symmetric part has eigenvalue " +
                            std::to_string(eigen_.values.front()));
    }
    for (double& lambda : eigen_.values) lambda = std::max(lambda, 0.0);
    case_ = Case::trust_region;
    method_ = "trust region";
  }
  center_image_.resize(d);
  op.apply(domain_.center, center_image_);
}

// Gap_C(x) (Q-GenX §2, Eq. Gap) = ⟨A(c), e⟩ + max_z gᵀz − zᵀSz with
// e = x − c and g = Mᵀe − A(c) (derivation in the header).
GapValue GapFunction::evaluate(std::span<const double> x) const {
  const std::size_t d = op_.dimension();
  if (x.size() != d) {
    throw InvalidArgument("gap: the point has " + std::to_string(x.size()) +
                          " elements, the operator " + std::to_string(d));
  }
  std::vector<double> e(d), g(d), z(d);
  for (std::size_t i = 0; i < d; ++i) e[i] = x[i] - domain_.center[i];
  multiply_transposed(op_.matrix(), e, g);
  for (std::size_t i = 0; i < d; ++i) g[i] -= center_image_[i];
  GapValue result;
  result.value = dot(center_image_, e) + maximize(g, z);
  result.maximizer.resize(d);
  for (std::size_t i = 0; i < d; ++i) result.maximizer[i] = domain_.center[i] + z[i];
  return result;
}

double GapFunction::maximize(std::span<const double> g, std::span<double> z) const {
  const double r = domain_.radius;
  if (case_ == Case::trust_region) return maximize_trust_region(g, z);
  if (domain_.shape == DomainShape::box) {
    double total = 0;
    for (std::size_t i = 0; i < g.size(); ++i) total += maximize_scalar(g[i], alpha_, r, z[i]);
    return total;
  }
  // Ball, S = αI: along g/‖g‖ with length t ∈ [0, R].
  const double norm = std::sqrt(squared_norm(g));
  if (norm == 0) {
    std::fill(z.begin(), z.end(), 0.0);
    return 0.0;
  }
  double t = 0;
  const double value = maximize_scalar(norm, alpha_, r, t);
  for (std::size_t i = 0; i < g.size(); ++i) z[i] = g[i] / norm * t;
  return value;
}

// The trust-region maximisation (see the header): in S's eigenbasis,
// w_i(μ) = h_i / (2(λ_i + μ)) with the smallest μ ≥ 0 that puts w in the
// ball. Terms with h_i = 0 contribute w_i = 0 for every μ.
double GapFunction::maximize_trust_region(std::span<const double> g, std::span<double> z) const {
  const std::size_t d = g.size();
  const Matrix& q = eigen_.vectors;
  const std::vector<double>& lambda = eigen_.values;
  std::vector<double> h(d), w(d);
  multiply_transposed(q, g, h);
  const double r = domain_.radius;
  const auto solve = [&](double mu) {
    double norm2 = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double denominator = 2.0 * (lambda[i] + mu);
      w[i] = h[i] == 0.0 ? 0.0 : h[i] / denominator;
      norm2 += w[i] * w[i];
    }
    return norm2;  // +inf when some h_i ≠ 0 has λ_i + μ = 0
  };
  double mu = 0;
  if (!(solve(0.0) <= r * r)) {
    // ‖w(μ)‖ decreases in μ; at μ = ‖h‖/(2R), ‖w‖ ≤ ‖h‖/(2μ) = R.
    double low = 0, high = std::sqrt(squared_norm(h)) / (2.0 * r);
    for (int i = 0; i < 2000; ++i) {
      const double middle = 0.5 * (low + high);
      if (middle <= low || middle >= high) break;
      (solve(middle) <= r * r ? high : low) = middle;
    }
    mu = high;  // the feasible end: ‖w(high)‖ ≤ R
    solve(mu);
  }
  double value = 0;
  for (std::size_t i = 0; i < d; ++i) value += h[i] * w[i] - lambda[i] * w[i] * w[i];
  multiply(q, w, z);
  return value;
}

}  // namespace qccl::vi
