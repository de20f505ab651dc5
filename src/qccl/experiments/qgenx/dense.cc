#include "qccl/experiments/qgenx/dense.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::vi {

Matrix Matrix::identity(std::size_t size) {
  Matrix m(size);
  for (std::size_t i = 0; i < size; ++i) m(i, i) = 1.0;
  return m;
}

void multiply(const Matrix& m, std::span<const double> x, std::span<double> out) {
  for (std::size_t i = 0; i < m.n; ++i) {
    double sum = 0;
    const double* row = m.values.data() + i * m.n;
    for (std::size_t j = 0; j < m.n; ++j) sum += row[j] * x[j];
    out[i] = sum;
  }
}

void multiply_transposed(const Matrix& m, std::span<const double> x, std::span<double> out) {
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m.n), 0.0);
  for (std::size_t i = 0; i < m.n; ++i) {
    const double* row = m.values.data() + i * m.n;
    for (std::size_t j = 0; j < m.n; ++j) out[j] += row[j] * x[i];
  }
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  Matrix c(a.n);
  for (std::size_t i = 0; i < a.n; ++i) {
    for (std::size_t k = 0; k < a.n; ++k) {
      const double aik = a(i, k);
      for (std::size_t j = 0; j < a.n; ++j) c(i, j) += aik * b(k, j);
    }
  }
  return c;
}

Matrix transpose(const Matrix& m) {
  Matrix t(m.n);
  for (std::size_t i = 0; i < m.n; ++i) {
    for (std::size_t j = 0; j < m.n; ++j) t(j, i) = m(i, j);
  }
  return t;
}

Matrix symmetric_part(const Matrix& m) {
  Matrix s(m.n);
  for (std::size_t i = 0; i < m.n; ++i) {
    for (std::size_t j = 0; j < m.n; ++j) s(i, j) = 0.5 * (m(i, j) + m(j, i));
  }
  return s;
}

Matrix from_eigen(const Matrix& q, std::span<const double> diagonal) {
  Matrix m(q.n);
  for (std::size_t i = 0; i < q.n; ++i) {
    for (std::size_t j = 0; j < q.n; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < q.n; ++k) sum += q(i, k) * diagonal[k] * q(j, k);
      m(i, j) = sum;
    }
  }
  return m;
}

double dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

double squared_norm(std::span<const double> a) { return dot(a, a); }

double spectral_norm(const Matrix& m) {
  if (m.n == 0) return 0;
  const auto eigen = symmetric_eigen(multiply(transpose(m), m));
  return std::sqrt(std::max(0.0, eigen.values.back()));
}

double uniform01(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index) {
  const CounterRng rng(seed, purpose, 0, 0, RngStream::data);
  return static_cast<double>(rng.bits64(index) >> 11) * 0x1p-53;
}

double standard_normal(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index) {
  // 1 − u is in (0, 1], so the logarithm is finite.
  const double u = 1.0 - uniform01(seed, purpose, 2 * index);
  const double v = uniform01(seed, purpose, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

// Modified Gram–Schmidt, twice per column (numerically orthogonal to
// rounding), on the columns of a standard normal matrix.
Matrix random_orthogonal(std::size_t n, std::uint64_t seed, std::uint64_t purpose) {
  std::vector<std::vector<double>> columns(n, std::vector<double>(n));
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < n; ++i) columns[j][i] = standard_normal(seed, purpose, j * n + i);
  }
  for (std::size_t j = 0; j < n; ++j) {
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t k = 0; k < j; ++k) {
        const double projection = dot(columns[j], columns[k]);
        for (std::size_t i = 0; i < n; ++i) columns[j][i] -= projection * columns[k][i];
      }
    }
    const double norm = std::sqrt(squared_norm(columns[j]));
    if (!(norm > 1e-12)) throw Error("random_orthogonal: a degenerate draw; use another seed");
    for (double& v : columns[j]) v /= norm;
  }
  Matrix q(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) q(i, j) = columns[j][i];
  }
  return q;
}

namespace {

// One Jacobi rotation zeroing a(p, q): a ← Jᵀ·a·J and v ← v·J, with
// t = tan θ the smaller root of t² + 2·ζ·t − 1 = 0, ζ = (a_qq − a_pp)/(2·a_pq).
void rotate(Matrix& a, Matrix& v, std::size_t p, std::size_t q) {
  const double zeta = (a(q, q) - a(p, p)) / (2.0 * a(p, q));
  const double t = std::isinf(zeta * zeta)
                       ? 0.5 / zeta
                       : std::copysign(1.0, zeta) / (std::abs(zeta) + std::sqrt(zeta * zeta + 1.0));
  const double c = 1.0 / std::sqrt(t * t + 1.0);
  const double s = t * c;
  const std::size_t n = a.n;
  for (std::size_t k = 0; k < n; ++k) {
    const double kp = a(k, p), kq = a(k, q);
    a(k, p) = c * kp - s * kq;
    a(k, q) = s * kp + c * kq;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const double pk = a(p, k), qk = a(q, k);
    a(p, k) = c * pk - s * qk;
    a(q, k) = s * pk + c * qk;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const double kp = v(k, p), kq = v(k, q);
    v(k, p) = c * kp - s * kq;
    v(k, q) = s * kp + c * kq;
  }
  a(p, q) = a(q, p) = 0.0;
}

}  // namespace

// Cyclic Jacobi (Golub & Van Loan §8.5): sweeps of rotations over every
// off-diagonal pair until the off-diagonal mass is below rounding of the
// whole matrix; quadratic convergence makes that a handful of sweeps.
SymmetricEigen symmetric_eigen(const Matrix& s) {
  const std::size_t n = s.n;
  Matrix a = s;
  Matrix v = Matrix::identity(n);
  const double total = squared_norm(a.values);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) off += a(p, q) * a(p, q);
    }
    if (off <= 1e-32 * total || off == 0.0) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        if (a(p, q) != 0.0) rotate(a, v, p, q);
      }
    }
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return a(i, i) < a(j, j); });
  SymmetricEigen result{std::vector<double>(n), Matrix(n)};
  for (std::size_t k = 0; k < n; ++k) {
    result.values[k] = a(order[k], order[k]);
    for (std::size_t i = 0; i < n; ++i) result.vectors(i, k) = v(i, order[k]);
  }
  return result;
}

}  // namespace qccl::vi
