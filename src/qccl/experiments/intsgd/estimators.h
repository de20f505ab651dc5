// A worker's gradient estimators g_i^k for f_i (IntSGD Appendix A.2,
// C.5): the full gradient, a minibatch stochastic gradient, and the L-SVRG
// estimator of Kovalev et al. (2020) — g = ∇f_il(x) − ∇f_il(w) + ∇f_i(w) over
// a minibatch, with the reference point w moved to x with probability p.
// Sampling uses counter-based random numbers keyed by (seed, rank,
// iteration), so a run is reproducible from its seed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qccl/experiments/intsgd/logistic.h"

namespace qccl::convex {

class GradientEstimator {
 public:
  virtual ~GradientEstimator() = default;
  // Writes the estimate at x for iteration k into g; returns how many
  // per-sample gradients it computed (the paper's #grad count).
  virtual std::size_t estimate(std::span<const double> x, std::uint64_t k, std::span<double> g) = 0;
};

std::unique_ptr<GradientEstimator> make_full_gradient(const LogisticObjective& objective);
// `batch` samples drawn uniformly with replacement.
std::unique_ptr<GradientEstimator> make_minibatch_gradient(const LogisticObjective& objective,
                                                           std::size_t batch, std::uint64_t seed,
                                                           int rank);
// L-SVRG with `batch` samples and refresh probability `probability`.
std::unique_ptr<GradientEstimator> make_lsvrg_gradient(const LogisticObjective& objective,
                                                       std::size_t batch, double probability,
                                                       std::uint64_t seed, int rank);

}  // namespace qccl::convex
