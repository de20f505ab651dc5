#include "qccl/codecs/quantizers/adaptive_scale.h"

#include <cmath>
#include <limits>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {

AdaptiveScale::AdaptiveScale(double beta, double epsilon) : beta_(beta), epsilon_(epsilon) {
  if (!(beta >= 0 && beta < 1)) throw InvalidArgument("IntSGD needs 0 <= beta < 1");
  if (!(epsilon >= 0 && std::isfinite(epsilon))) throw InvalidArgument("IntSGD needs eps >= 0");
}

void check_step_size(double eta) {
  if (!(eta > 0 && std::isfinite(eta))) {
    throw InvalidArgument("IntSGD: the step size must be positive and finite, got " +
                          std::to_string(eta));
  }
}

void AdaptiveScale::observe(std::span<double> state, double squared_norm, double eta) const {
  check_step_size(eta);
  if (!std::isfinite(squared_norm)) {
    throw InvalidArgument("IntSGD: the update x_k - x_(k-1) is not finite");
  }
  state[1] = beta_ * state[1] + (1 - beta_) * squared_norm;
  state[2] = eta;
  state[0] = 1.0;
}

double AdaptiveScale::alpha(std::span<const double> state, std::size_t size, int ranks) const {
  const double d = static_cast<double>(size);
  const double eta = state[2];
  const double denominator = std::sqrt(2.0 * ranks * state[1] + eta * eta * d * epsilon_ * epsilon_);
  if (denominator == 0.0) return std::numeric_limits<double>::infinity();
  return eta * std::sqrt(d) / denominator;
}

}  // namespace qccl
