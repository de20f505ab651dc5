#include "qccl/engines/row_updates.h"

#include <cmath>

// Built with -ffp-contract=off like adam_kernel.cc: the bits are the ones
// written here, whatever the instruction set (src/CMakeLists.txt).

namespace qccl::engines {

void lazy_adam_rows(const AdamArrays& table, const GradientRows& gradient,
                    const AdamCoefficients& c, AdamRounding rounding) {
  const std::size_t w = gradient.width;
  for (std::size_t k = 0; k < gradient.count; ++k) {
    const auto at = (gradient.rows ? static_cast<std::size_t>(gradient.rows[k]) : k) * w;
    adam_update_arrays({table.param + at, gradient.values + k * w, table.exp_avg + at,
                        table.exp_avg_sq + at,
                        table.max_exp_avg_sq ? table.max_exp_avg_sq + at : nullptr, w},
                       c, rounding);
  }
}

void rowwise_adagrad_rows(float* param, float* accumulator, const GradientRows& gradient,
                          float lr, float eps) {
  const std::size_t w = gradient.width;
  for (std::size_t k = 0; k < gradient.count; ++k) {
    const auto row = gradient.rows ? static_cast<std::size_t>(gradient.rows[k]) : k;
    const float* g = gradient.values + k * w;
    float squares = 0.0f;
    for (std::size_t j = 0; j < w; ++j) squares += g[j] * g[j];
    accumulator[row] += squares / static_cast<float>(w);
    const float multiplier = lr / (std::sqrt(accumulator[row]) + eps);
    float* p = param + row * w;
    for (std::size_t j = 0; j < w; ++j) p[j] -= multiplier * g[j];
  }
}

}  // namespace qccl::engines
