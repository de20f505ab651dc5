#include "qccl/engines/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "qccl/common/errors.h"

namespace qccl::engines {

std::vector<std::string> lr_schedule_names() { return {"constant", "cosine", "linear"}; }

void validate(const LrSchedule& s) {
  const auto names = lr_schedule_names();
  if (std::find(names.begin(), names.end(), s.shape) == names.end()) {
    throw InvalidArgument("train: unknown --lr-schedule '" + s.shape +
                          "'; choose one of constant, cosine, linear");
  }
  if (s.shape != "constant" && s.total_steps > 0 && s.warmup_steps >= s.total_steps) {
    throw InvalidArgument("train: --warmup-steps (" + std::to_string(s.warmup_steps) +
                          ") must be shorter than the run (" + std::to_string(s.total_steps) +
                          " steps) for a decaying schedule");
  }
}

// Warm-up: step k < W runs at base·(k+1)/W. After it, with progress
// p = (k − W)/(T − W) in [0, 1): constant keeps base, cosine gives
// base·(1 + cos πp)/2, linear base·(1 − p).
double learning_rate(const LrSchedule& s, std::size_t step) {
  if (step < s.warmup_steps) {
    return s.base * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  if (s.shape == "constant" || s.total_steps <= s.warmup_steps) return s.base;
  const double p = std::min(1.0, static_cast<double>(step - s.warmup_steps) /
                                     static_cast<double>(s.total_steps - s.warmup_steps));
  if (s.shape == "cosine") return s.base * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
  return s.base * (1.0 - p);
}

}  // namespace qccl::engines
