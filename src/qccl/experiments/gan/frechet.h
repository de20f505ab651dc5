// The Fréchet distance between two Gaussians fitted to feature vectors
// (Heusel et al. 2017's FID, on whatever features the caller has: qccl's
// GAN experiment uses a Fashion-MNIST classifier it trains itself, not
// Inception, so its numbers are not FIDs). No libtorch: plain fp64.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace qccl::engines {

// Mean and covariance (unbiased, divided by count − 1) of `count` vectors of
// dimension `dim`; covariance row-major dim × dim.
struct GaussianStats {
  std::size_t dim = 0;
  double count = 0;
  std::vector<double> mean, covariance;
};

// Sums that make GaussianStats and add up across ranks: the count, Σ f and
// Σ f·fᵀ, in fp64, laid out as one vector (values()) so that one sum over
// ranks combines them.
class MomentSums {
 public:
  explicit MomentSums(std::size_t dim);
  std::size_t dim() const { return dim_; }
  // Adds `rows` vectors of dimension dim(), row-major.
  void add(std::span<const float> vectors, std::size_t rows);
  // [count, Σ f (dim), Σ f·fᵀ (dim²)]: sum it over ranks in place.
  std::span<double> values() { return values_; }
  // Throws InvalidArgument with fewer than 2 vectors.
  GaussianStats stats() const;

 private:
  std::size_t dim_;
  std::vector<double> values_;
};

// Eigenvalues and eigenvectors of the symmetric n × n matrix `a`
// (row-major), by cyclic Jacobi rotations: eigenvalues ascending,
// `vectors` row-major with eigenvector k in column k.
void symmetric_eigen(std::vector<double> a, std::size_t n, std::vector<double>& values,
                     std::vector<double>& vectors);

// FD = ‖μ_a − μ_b‖² + Tr(Σ_a + Σ_b − 2(Σ_a^½ Σ_b Σ_a^½)^½). The square roots
// come from eigen-decompositions of symmetric matrices, with eigenvalues
// below zero (rounding) taken as zero. Throws InvalidArgument when the
// dimensions differ.
double frechet_distance(const GaussianStats& a, const GaussianStats& b);

}  // namespace qccl::engines
