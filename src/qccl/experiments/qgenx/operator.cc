#include "qccl/experiments/qgenx/operator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::vi {

AffineOperator::AffineOperator(Matrix matrix, std::vector<double> offset)
    : matrix_(std::move(matrix)), offset_(std::move(offset)) {
  if (offset_.size() != matrix_.n) {
    throw InvalidArgument("AffineOperator: the offset has " + std::to_string(offset_.size()) +
                          " elements, the matrix " + std::to_string(matrix_.n) + " rows");
  }
}

void AffineOperator::apply(std::span<const double> x, std::span<double> out) const {
  multiply(matrix_, x, out);
  for (std::size_t i = 0; i < offset_.size(); ++i) out[i] += offset_[i];
}

OperatorConstants operator_constants(const AffineOperator& op) {
  const Matrix& m = op.matrix();
  const std::size_t n = m.n;
  OperatorConstants constants;
  constants.lipschitz = spectral_norm(m);
  if (n == 0) return constants;
  const auto eigen = symmetric_eigen(symmetric_part(m));
  constants.strong_monotonicity = eigen.values.front();
  // Eigenvalues below rounding of the largest count as zero.
  const double tolerance = 1e-12 * std::max(1.0, constants.lipschitz);
  std::vector<double> inverse_root(n, 0.0);
  std::vector<double> column(n), image(n);
  for (std::size_t k = 0; k < n; ++k) {
    const double lambda = eigen.values[k];
    if (lambda > tolerance) {
      inverse_root[k] = 1.0 / std::sqrt(lambda);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) column[i] = eigen.vectors(i, k);
    multiply(m, column, image);
    if (std::sqrt(squared_norm(image)) > 1e-9 * std::max(1.0, constants.lipschitz)) {
      return constants;  // M moves a direction S does not: β = 0
    }
  }
  // G = S^{+½}·MᵀM·S^{+½}, with S^{+½} = Q·diag(inverse_root)·Qᵀ.
  const Matrix root = from_eigen(eigen.vectors, inverse_root);
  const Matrix mr = multiply(m, root);
  const Matrix g = multiply(transpose(mr), mr);
  const double largest = symmetric_eigen(g).values.back();
  // M = 0 (a constant operator) is β-co-coercive for every β.
  constants.cocoercivity = largest > 0 ? 1.0 / largest : INFINITY;
  return constants;
}

}  // namespace qccl::vi
