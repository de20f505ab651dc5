#include "qccl/experiments/intsgd/logistic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "qccl/common/errors.h"

namespace qccl::convex {
namespace {

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// 1/(1 + exp(z)) without overflow: minus the derivative of log(1 + exp(−z)).
double sigmoid_of_minus(double z) {
  if (z >= 0) {
    const double e = std::exp(-z);
    return e / (1 + e);
  }
  return 1 / (1 + std::exp(z));
}

}  // namespace

double logistic_loss(double z) {
  return z > 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));
}

LogisticObjective::LogisticObjective(const Dataset& data, std::vector<std::size_t> rows,
                                     std::vector<double> weights, double lambda)
    : data_(&data), rows_(std::move(rows)), weights_(std::move(weights)), lambda_(lambda) {
  if (rows_.size() != weights_.size()) throw InvalidArgument("one weight per row is needed");
  if (!(lambda >= 0)) throw InvalidArgument("the regularization lambda must be >= 0");
}

LogisticObjective LogisticObjective::shard(const Dataset& data, std::size_t first,
                                           std::size_t count, double lambda) {
  if (count == 0) throw InvalidArgument("a shard needs at least one sample");
  std::vector<std::size_t> rows(count);
  std::iota(rows.begin(), rows.end(), first);
  return {data, std::move(rows), std::vector<double>(count, 1.0 / static_cast<double>(count)),
          lambda};
}

LogisticObjective LogisticObjective::federation(const Dataset& data,
                                                std::span<const std::size_t> starts,
                                                double lambda) {
  const std::size_t n = starts.size() - 1;
  std::vector<std::size_t> rows;
  std::vector<double> weights;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t m = starts[i + 1] - starts[i];
    if (m == 0) throw InvalidArgument("every worker needs at least one sample");
    for (std::size_t r = starts[i]; r < starts[i + 1]; ++r) {
      rows.push_back(r);
      weights.push_back(1.0 / (static_cast<double>(n) * static_cast<double>(m)));
    }
  }
  return {data, std::move(rows), std::move(weights), lambda};
}

double LogisticObjective::value(std::span<const double> x) const {
  double sum = 0;
  for (std::size_t k = 0; k < rows_.size(); ++k) {
    sum += weights_[k] * logistic_loss(data_->label(rows_[k]) * data_->dot(rows_[k], x));
  }
  return sum + 0.5 * lambda_ * dot(x, x);
}

void LogisticObjective::gradient(std::span<const double> x, std::span<double> out) const {
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = lambda_ * x[j];
  for (std::size_t k = 0; k < rows_.size(); ++k) {
    const std::size_t row = rows_[k];
    const double b = data_->label(row);
    data_->add_scaled_row(row, -weights_[k] * b * sigmoid_of_minus(b * data_->dot(row, x)), out);
  }
}

void LogisticObjective::add_sample_gradient(std::span<const double> x, std::size_t k,
                                            double scale, std::span<double> out) const {
  const std::size_t row = rows_[k];
  const double b = data_->label(row);
  data_->add_scaled_row(row, -scale * b * sigmoid_of_minus(b * data_->dot(row, x)), out);
  for (std::size_t j = 0; j < out.size(); ++j) out[j] += scale * lambda_ * x[j];
}

void LogisticObjective::hessian_vector(std::span<const double> x, std::span<const double> v,
                                       std::span<double> out) const {
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = lambda_ * v[j];
  for (std::size_t k = 0; k < rows_.size(); ++k) {
    const std::size_t row = rows_[k];
    const double s = sigmoid_of_minus(data_->label(row) * data_->dot(row, x));
    data_->add_scaled_row(row, weights_[k] * s * (1 - s) * data_->dot(row, v), out);
  }
}

std::vector<double> LogisticObjective::hessian(std::span<const double> x) const {
  const std::size_t d = dimension();
  std::vector<double> h(d * d, 0.0);
  for (std::size_t k = 0; k < rows_.size(); ++k) {
    const std::size_t row = rows_[k];
    const double s = sigmoid_of_minus(data_->label(row) * data_->dot(row, x));
    const double c = weights_[k] * s * (1 - s);
    const auto cols = data_->columns(row);
    const auto vals = data_->values(row);
    for (std::size_t p = 0; p < cols.size(); ++p) {
      double* line = h.data() + cols[p] * d;
      const double cp = c * vals[p];
      for (std::size_t q = 0; q < cols.size(); ++q) line[cols[q]] += cp * vals[q];
    }
  }
  for (std::size_t j = 0; j < d; ++j) h[j * d + j] += lambda_;
  return h;
}

double LogisticObjective::sample_smoothness() const {
  double largest = 0;
  for (std::size_t row : rows_) largest = std::max(largest, data_->row_squared_norm(row));
  return largest / 4 + lambda_;
}

// Power iteration on M = Σ w_l a_l a_lᵀ from a fixed start; 100 rounds bring
// the Rayleigh quotient within a few percent of λ_max, and its error is
// always from below, so the result is padded by 5%.
double LogisticObjective::smoothness() const {
  const std::size_t d = dimension();
  std::vector<double> v(d), w(d);
  for (std::size_t j = 0; j < d; ++j) v[j] = 1.0 + 0.01 * static_cast<double>(j % 17);
  double eigen = 0;
  for (int round = 0; round < 100; ++round) {
    const double norm = std::sqrt(dot(v, v));
    if (norm == 0) break;
    for (double& e : v) e /= norm;
    std::fill(w.begin(), w.end(), 0.0);
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      data_->add_scaled_row(rows_[k], weights_[k] * data_->dot(rows_[k], v), w);
    }
    eigen = dot(v, w);
    std::swap(v, w);
  }
  return 1.05 * eigen / 4 + lambda_;
}

namespace {

// Solves H·s = g for symmetric positive definite H (row-major, overwritten by
// its Cholesky factor).
std::vector<double> cholesky_solve(std::vector<double>& h, std::span<const double> g) {
  const std::size_t d = g.size();
  for (std::size_t j = 0; j < d; ++j) {
    double diag = h[j * d + j];
    for (std::size_t k = 0; k < j; ++k) diag -= h[j * d + k] * h[j * d + k];
    if (!(diag > 0)) throw InvalidArgument("the Hessian is not positive definite (lambda = 0?)");
    const double root = std::sqrt(diag);
    h[j * d + j] = root;
    for (std::size_t i = j + 1; i < d; ++i) {
      double s = h[i * d + j];
      for (std::size_t k = 0; k < j; ++k) s -= h[i * d + k] * h[j * d + k];
      h[i * d + j] = s / root;
    }
  }
  std::vector<double> y(d);
  for (std::size_t i = 0; i < d; ++i) {
    double s = g[i];
    for (std::size_t k = 0; k < i; ++k) s -= h[i * d + k] * y[k];
    y[i] = s / h[i * d + i];
  }
  for (std::size_t i = d; i-- > 0;) {
    double s = y[i];
    for (std::size_t k = i + 1; k < d; ++k) s -= h[k * d + i] * y[k];
    y[i] = s / h[i * d + i];
  }
  return y;
}

// Conjugate gradients on ∇²f(x)·s = g, to a relative residual of 1e-12.
std::vector<double> cg_solve(const LogisticObjective& objective, std::span<const double> x,
                             std::span<const double> g) {
  const std::size_t d = g.size();
  std::vector<double> s(d, 0.0), r(g.begin(), g.end()), p = r, hp(d);
  double rr = dot(r, r);
  const double target = 1e-24 * rr;
  for (std::size_t it = 0; it < 10 * d && rr > target; ++it) {
    objective.hessian_vector(x, p, hp);
    const double step = rr / dot(p, hp);
    for (std::size_t j = 0; j < d; ++j) {
      s[j] += step * p[j];
      r[j] -= step * hp[j];
    }
    const double next = dot(r, r);
    for (std::size_t j = 0; j < d; ++j) p[j] = r[j] + next / rr * p[j];
    rr = next;
  }
  return s;
}

}  // namespace

double minimize(const LogisticObjective& objective, std::vector<double>& x) {
  const std::size_t d = objective.dimension();
  x.resize(d, 0.0);
  std::vector<double> g(d), trial(d);
  double f = objective.value(x);
  for (int iteration = 0; iteration < 100; ++iteration) {
    objective.gradient(x, g);
    if (std::sqrt(dot(g, g)) < 1e-15) break;
    std::vector<double> direction;
    if (d <= 4096) {
      auto h = objective.hessian(x);
      direction = cholesky_solve(h, g);
    } else {
      direction = cg_solve(objective, x, g);
    }
    const double slope = dot(g, direction);
    // Near the optimum the predicted decrease slope/2 drops below what fp64
    // resolves in f; the full Newton step is then taken while it still
    // shrinks the gradient (quadratic convergence), so x* is accurate to
    // the last digits, not just f*.
    if (slope < 1e-13 * std::max(1.0, std::abs(f))) {
      for (std::size_t j = 0; j < d; ++j) trial[j] = x[j] - direction[j];
      std::vector<double> next_gradient(d);
      objective.gradient(trial, next_gradient);
      if (dot(next_gradient, next_gradient) >= dot(g, g)) break;
      x = trial;
      f = std::min(f, objective.value(x));
      continue;
    }
    // Backtracking (Armijo) on the Newton step; stop when no step lowers f.
    double step = 1;
    bool moved = false;
    for (int halving = 0; halving < 40; ++halving, step /= 2) {
      for (std::size_t j = 0; j < d; ++j) trial[j] = x[j] - step * direction[j];
      const double next = objective.value(trial);
      if (next <= f - 1e-4 * step * slope) {
        moved = next < f;
        x = trial;
        f = next;
        break;
      }
    }
    if (!moved) break;
  }
  return f;
}

}  // namespace qccl::convex
