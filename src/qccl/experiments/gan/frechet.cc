#include "qccl/experiments/gan/frechet.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::engines {

MomentSums::MomentSums(std::size_t dim) : dim_(dim), values_(1 + dim + dim * dim, 0.0) {
  if (dim == 0) throw InvalidArgument("moment sums: the feature dimension must be positive");
}

void MomentSums::add(std::span<const float> vectors, std::size_t rows) {
  if (vectors.size() != rows * dim_) {
    throw InvalidArgument("moment sums: " + std::to_string(vectors.size()) + " values are not " +
                          std::to_string(rows) + " vectors of dimension " + std::to_string(dim_));
  }
  double* sum = values_.data() + 1;
  double* outer = sum + dim_;
  std::vector<double> f(dim_);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < dim_; ++i) f[i] = vectors[r * dim_ + i];
    for (std::size_t i = 0; i < dim_; ++i) {
      sum[i] += f[i];
      for (std::size_t j = 0; j < dim_; ++j) outer[i * dim_ + j] += f[i] * f[j];
    }
  }
  values_[0] += static_cast<double>(rows);
}

// μ = Σf/n, Σ = (Σ f·fᵀ − n·μ·μᵀ)/(n − 1).
GaussianStats MomentSums::stats() const {
  const double n = values_[0];
  if (n < 2) throw InvalidArgument("moment sums: a covariance needs at least 2 vectors");
  GaussianStats s;
  s.dim = dim_;
  s.count = n;
  s.mean.assign(values_.begin() + 1, values_.begin() + 1 + static_cast<std::ptrdiff_t>(dim_));
  for (double& m : s.mean) m /= n;
  s.covariance.resize(dim_ * dim_);
  const double* outer = values_.data() + 1 + dim_;
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < dim_; ++j) {
      s.covariance[i * dim_ + j] = (outer[i * dim_ + j] - n * s.mean[i] * s.mean[j]) / (n - 1);
    }
  }
  return s;
}

// Cyclic Jacobi (Golub & Van Loan, Algorithm 8.5.3): sweeps of rotations,
// each zeroing one off-diagonal pair, until the off-diagonal mass is
// negligible against the matrix's norm. Accumulates the rotations in
// `vectors`. Quadratic convergence: a few sweeps for n in the hundreds.
void symmetric_eigen(std::vector<double> a, std::size_t n, std::vector<double>& values,
                     std::vector<double>& vectors) {
  if (a.size() != n * n) throw InvalidArgument("symmetric_eigen: the matrix is not n × n");
  vectors.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) vectors[i * n + i] = 1;
  const auto at = [&](std::size_t i, std::size_t j) -> double& { return a[i * n + j]; };
  double norm = 0;
  for (const double x : a) norm += x * x;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) off += 2 * at(i, j) * at(i, j);
    }
    if (off <= 1e-30 * norm || off == 0) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double vkp = vectors[k * n + p], vkq = vectors[k * n + q];
          vectors[k * n + p] = c * vkp - s * vkq;
          vectors[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return at(x, x) < at(y, y); });
  values.resize(n);
  std::vector<double> sorted(n * n);
  for (std::size_t k = 0; k < n; ++k) {
    values[k] = at(order[k], order[k]);
    for (std::size_t i = 0; i < n; ++i) sorted[i * n + k] = vectors[i * n + order[k]];
  }
  vectors = std::move(sorted);
}

namespace {

// V·diag(f(λ))·Vᵀ for the symmetric `a`.
std::vector<double> apply_to_spectrum(const std::vector<double>& a, std::size_t n,
                                      double (*f)(double)) {
  std::vector<double> values, vectors;
  symmetric_eigen(a, n, values, vectors);
  std::vector<double> out(n * n, 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    const double fk = f(values[k]);
    for (std::size_t i = 0; i < n; ++i) {
      const double vik = vectors[i * n + k] * fk;
      for (std::size_t j = 0; j < n; ++j) out[i * n + j] += vik * vectors[j * n + k];
    }
  }
  return out;
}

std::vector<double> multiply(const std::vector<double>& a, const std::vector<double>& b,
                             std::size_t n) {
  std::vector<double> c(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
  return c;
}

double clamped_sqrt(double x) { return std::sqrt(std::max(x, 0.0)); }

}  // namespace

// Tr((Σ_a^½ Σ_b Σ_a^½)^½) is the sum of the square roots of the eigenvalues
// of the symmetric positive semi-definite Σ_a^½ Σ_b Σ_a^½ (the same as
// those of Σ_a Σ_b, so the distance is symmetric).
double frechet_distance(const GaussianStats& a, const GaussianStats& b) {
  const std::size_t n = a.dim;
  if (b.dim != n || a.mean.size() != n || b.mean.size() != n || a.covariance.size() != n * n ||
      b.covariance.size() != n * n) {
    throw InvalidArgument("Fréchet distance: statistics of dimension " + std::to_string(a.dim) +
                          " and " + std::to_string(b.dim) + "; both must come from the same features");
  }
  double distance = 0;
  for (std::size_t i = 0; i < n; ++i) {
    distance += (a.mean[i] - b.mean[i]) * (a.mean[i] - b.mean[i]);
    distance += a.covariance[i * n + i] + b.covariance[i * n + i];
  }
  const auto root_a = apply_to_spectrum(a.covariance, n, clamped_sqrt);
  auto middle = multiply(multiply(root_a, b.covariance, n), root_a, n);
  for (std::size_t i = 0; i < n; ++i) {  // symmetric up to rounding: make it exactly so
    for (std::size_t j = i + 1; j < n; ++j) {
      const double m = 0.5 * (middle[i * n + j] + middle[j * n + i]);
      middle[i * n + j] = middle[j * n + i] = m;
    }
  }
  std::vector<double> values, vectors;
  symmetric_eigen(std::move(middle), n, values, vectors);
  double trace_root = 0;
  for (const double v : values) trace_root += clamped_sqrt(v);
  return distance - 2 * trace_root;
}

}  // namespace qccl::engines
