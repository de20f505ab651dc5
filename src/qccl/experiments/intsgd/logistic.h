// ℓ2-regularized logistic regression (IntSGD Appendix C.5):
//   f(x) = Σ_l w_l·log(1 + exp(−b_l·a_l·x)) + λ/2·‖x‖²
// over a set of rows with weights w_l. A worker's f_i weighs its m_i rows by
// 1/m_i; the distributed problem f = (1/n)Σ_i f_i weighs row l of shard i by
// 1/(n·m_i).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "qccl/experiments/intsgd/dataset.h"

namespace qccl::convex {

class LogisticObjective {
 public:
  LogisticObjective(const Dataset& data, std::vector<std::size_t> rows, std::vector<double> weights,
                    double lambda);
  // f_i over rows [first, first + count), each weighted 1/count.
  static LogisticObjective shard(const Dataset& data, std::size_t first, std::size_t count,
                                 double lambda);
  // (1/n)Σ_i f_i for the shards [starts[i], starts[i+1]) (starts ends with rows()).
  static LogisticObjective federation(const Dataset& data, std::span<const std::size_t> starts,
                                      double lambda);

  std::size_t dimension() const { return data_->features(); }
  std::size_t samples() const { return rows_.size(); }
  double lambda() const { return lambda_; }

  double value(std::span<const double> x) const;
  void gradient(std::span<const double> x, std::span<double> out) const;
  // ∇f_il(x) = ∇ of sample k's loss + λx (the regularizer is part of every
  // f_il): out += scale·∇f_il(x).
  void add_sample_gradient(std::span<const double> x, std::size_t k, double scale,
                           std::span<double> out) const;
  // Hessian-vector product ∇²f(x)·v.
  void hessian_vector(std::span<const double> x, std::span<const double> v,
                      std::span<double> out) const;
  // Dense Hessian, row-major d×d.
  std::vector<double> hessian(std::span<const double> x) const;

  // max_l ‖a_l‖²/4 + λ: every f_il's smoothness constant.
  double sample_smoothness() const;
  // λ_max(Σ w_l a_l a_lᵀ)/4 + λ by power iteration: f's smoothness constant.
  double smoothness() const;

 private:
  const Dataset* data_;
  std::vector<std::size_t> rows_;
  std::vector<double> weights_;
  double lambda_;
};

// log(1 + exp(−z)) without overflow.
double logistic_loss(double z);

// Minimizes f to fp64 accuracy by Newton's method (dense Hessian and
// Cholesky up to 4096 features, conjugate gradients beyond) with a
// backtracking line search; returns f* and leaves the minimizer in x.
double minimize(const LogisticObjective& objective, std::vector<double>& x);

}  // namespace qccl::convex
