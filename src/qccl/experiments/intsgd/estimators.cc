#include "qccl/experiments/intsgd/estimators.h"

#include <algorithm>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::convex {
namespace {

class FullGradient final : public GradientEstimator {
 public:
  explicit FullGradient(const LogisticObjective& objective) : objective_(objective) {}
  std::size_t estimate(std::span<const double> x, std::uint64_t, std::span<double> g) override {
    objective_.gradient(x, g);
    return objective_.samples();
  }

 private:
  const LogisticObjective& objective_;
};

// The k-th iteration's minibatch: `batch` indices in [0, m), uniform.
class Sampler {
 public:
  Sampler(std::size_t samples, std::size_t batch, std::uint64_t seed, int rank)
      : samples_(samples), batch_(batch),
        rng_(seed, 0, 0, static_cast<std::uint64_t>(rank), RngStream::shared) {
    if (batch < 1) throw InvalidArgument("a minibatch needs at least one sample");
  }
  std::size_t batch() const { return batch_; }
  std::size_t index(std::uint64_t k, std::size_t j) const {
    return static_cast<std::size_t>(rng_.bits64(k * batch_ + j) % samples_);
  }
  // Uniform in [0, 1) for iteration k, independent of the indices.
  double coin(std::uint64_t k) const {
    return static_cast<double>(CounterRng(rng_.key(), k, 1, 0, RngStream::shared).bits64(0) >> 11) *
           0x1p-53;
  }

 private:
  std::size_t samples_, batch_;
  CounterRng rng_;
};

class MinibatchGradient final : public GradientEstimator {
 public:
  MinibatchGradient(const LogisticObjective& objective, std::size_t batch, std::uint64_t seed,
                    int rank)
      : objective_(objective), sampler_(objective.samples(), batch, seed, rank) {}
  std::size_t estimate(std::span<const double> x, std::uint64_t k, std::span<double> g) override {
    std::fill(g.begin(), g.end(), 0.0);
    const double scale = 1.0 / static_cast<double>(sampler_.batch());
    for (std::size_t j = 0; j < sampler_.batch(); ++j) {
      objective_.add_sample_gradient(x, sampler_.index(k, j), scale, g);
    }
    return sampler_.batch();
  }

 private:
  const LogisticObjective& objective_;
  Sampler sampler_;
};

class LsvrgGradient final : public GradientEstimator {
 public:
  LsvrgGradient(const LogisticObjective& objective, std::size_t batch, double probability,
                std::uint64_t seed, int rank)
      : objective_(objective), sampler_(objective.samples(), batch, seed, rank),
        probability_(probability) {
    if (!(probability > 0 && probability <= 1)) {
      throw InvalidArgument("the L-SVRG refresh probability must be in (0, 1]");
    }
  }

  std::size_t estimate(std::span<const double> x, std::uint64_t k, std::span<double> g) override {
    std::size_t cost = 0;
    if (reference_.empty()) {  // w^0 = x^0
      cost += refresh(x);
    }
    std::copy(reference_gradient_.begin(), reference_gradient_.end(), g.begin());
    const double scale = 1.0 / static_cast<double>(sampler_.batch());
    for (std::size_t j = 0; j < sampler_.batch(); ++j) {
      const std::size_t i = sampler_.index(k, j);
      objective_.add_sample_gradient(x, i, scale, g);
      objective_.add_sample_gradient(reference_, i, -scale, g);
    }
    cost += 2 * sampler_.batch();
    if (sampler_.coin(k) < probability_) cost += refresh(x);  // w^(k+1) = x^k
    return cost;
  }

 private:
  std::size_t refresh(std::span<const double> x) {
    reference_.assign(x.begin(), x.end());
    reference_gradient_.resize(x.size());
    objective_.gradient(reference_, reference_gradient_);
    return objective_.samples();
  }

  const LogisticObjective& objective_;
  Sampler sampler_;
  double probability_;
  std::vector<double> reference_, reference_gradient_;
};

}  // namespace

std::unique_ptr<GradientEstimator> make_full_gradient(const LogisticObjective& objective) {
  return std::make_unique<FullGradient>(objective);
}

std::unique_ptr<GradientEstimator> make_minibatch_gradient(const LogisticObjective& objective,
                                                           std::size_t batch, std::uint64_t seed,
                                                           int rank) {
  return std::make_unique<MinibatchGradient>(objective, batch, seed, rank);
}

std::unique_ptr<GradientEstimator> make_lsvrg_gradient(const LogisticObjective& objective,
                                                       std::size_t batch, double probability,
                                                       std::uint64_t seed, int rank) {
  return std::make_unique<LsvrgGradient>(objective, batch, probability, seed, rank);
}

}  // namespace qccl::convex
