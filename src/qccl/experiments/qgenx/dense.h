// Small dense linear algebra in fp64 for the variational-inequality
// problems: row-major square matrices, products, random orthogonal bases
// and the symmetric eigen-decomposition the gap function needs. Sizes are
// those of test problems (d up to a few hundred), so plain loops suffice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qccl::vi {

// A d×d matrix, row-major.
struct Matrix {
  std::size_t n = 0;
  std::vector<double> values;  // n·n

  Matrix() = default;
  explicit Matrix(std::size_t size) : n(size), values(size * size, 0.0) {}
  static Matrix identity(std::size_t size);

  double& operator()(std::size_t row, std::size_t column) { return values[row * n + column]; }
  double operator()(std::size_t row, std::size_t column) const { return values[row * n + column]; }
};

// out = M·x.
void multiply(const Matrix& m, std::span<const double> x, std::span<double> out);
// out = Mᵀ·x.
void multiply_transposed(const Matrix& m, std::span<const double> x, std::span<double> out);
// A·B.
Matrix multiply(const Matrix& a, const Matrix& b);
Matrix transpose(const Matrix& m);
// (M + Mᵀ)/2.
Matrix symmetric_part(const Matrix& m);
// Q·diag(d)·Qᵀ.
Matrix from_eigen(const Matrix& q, std::span<const double> diagonal);

double dot(std::span<const double> a, std::span<const double> b);
double squared_norm(std::span<const double> a);
// The largest singular value: the square root of MᵀM's largest eigenvalue.
double spectral_norm(const Matrix& m);

// A Haar-distributed random orthogonal matrix: Gram–Schmidt on a standard
// normal matrix drawn from the counter-based generator keyed by `seed` and
// `purpose` (so different matrices of one problem are independent).
Matrix random_orthogonal(std::size_t n, std::uint64_t seed, std::uint64_t purpose);

// Standard normal number `index` of the stream keyed by (seed, purpose):
// Box–Muller on two 53-bit uniforms.
double standard_normal(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index);
// Uniform in [0, 1) with 53 random bits, number `index` of the stream.
double uniform01(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index);

// Eigen-decomposition of a symmetric matrix S = Q·diag(λ)·Qᵀ by cyclic
// Jacobi rotations, to machine precision. Eigenvalues ascending; column i of
// `vectors` is the eigenvector of values[i].
struct SymmetricEigen {
  std::vector<double> values;
  Matrix vectors;
};
SymmetricEigen symmetric_eigen(const Matrix& s);

}  // namespace qccl::vi
