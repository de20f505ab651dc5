#include "qccl/codecs/sparsifiers/dgc_selection.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "qccl/codecs/sparsifiers/sparse_selection.h"

namespace qccl {

double dgc_density(double ratio, std::uint64_t warmup, std::uint64_t step) {
  std::uint64_t stages = 0;  // J: the powers of 1/4 above ratio
  for (double p = 0.25; p > ratio; p /= 4) ++stages;
  if (step >= warmup || stages == 0) return ratio;
  const std::uint64_t stage = step * stages / warmup;  // 0 .. J-1
  return std::ldexp(1.0, -2 * static_cast<int>(stage + 1));
}

std::size_t dgc_max_selected(std::size_t k) {
  return std::max(k, static_cast<std::size_t>(std::floor(kDgcRaise * static_cast<double>(k))));
}

std::size_t dgc_sample_size(std::size_t d, std::size_t k, double sample) {
  if (d == 0 || k == 0) return 0;
  const double wanted = std::max(std::ceil(sample * static_cast<double>(d)),
                                 std::ceil(8.0 * static_cast<double>(d) / static_cast<double>(k)));
  return wanted >= static_cast<double>(d) ? d : static_cast<std::size_t>(wanted);
}

namespace {

std::size_t count_at_least(std::span<const float> v, double threshold) {
  std::size_t count = 0;
  for (float x : v) count += static_cast<double>(std::abs(x)) >= threshold ? 1 : 0;
  return count;
}

// τ: the ⌈k·S/d⌉-th largest of S sampled magnitudes (step 1).
double estimate_threshold(std::span<const float> v, std::size_t k, double sample,
                          const CounterRng& rng, std::vector<float>& scratch) {
  const std::size_t d = v.size();
  const std::size_t s = dgc_sample_size(d, k, sample);
  scratch.resize(s);
  std::size_t rank = k;  // of the whole tensor
  if (s == d) {
    for (std::size_t j = 0; j < d; ++j) scratch[j] = std::abs(v[j]);
  } else {
    for (std::size_t i = 0; i < s; ++i) scratch[i] = std::abs(v[uniform_below(rng, i, d)]);
    const double scaled = std::ceil(static_cast<double>(k) * static_cast<double>(s) /
                                    static_cast<double>(d));
    rank = std::clamp<std::size_t>(static_cast<std::size_t>(scaled), 1, s);
  }
  const auto kth = scratch.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(scratch.begin(), kth, scratch.end(), std::greater<>());
  return *kth;
}

}  // namespace

ThresholdOutcome adjust_threshold(std::span<const float> v, double initial, std::size_t k) {
  ThresholdOutcome outcome{initial, count_at_least(v, initial), 0};
  const double high = kDgcRaise * static_cast<double>(k);
  const double low = kDgcLower * static_cast<double>(k);
  while (outcome.adjustments < kDgcMaxAdjustments) {
    const auto count = static_cast<double>(outcome.count);
    if (count > high) {
      outcome.threshold *= kDgcRaise;
    } else if (count < low) {
      outcome.threshold *= kDgcLower;
    } else {
      break;
    }
    ++outcome.adjustments;
    outcome.count = count_at_least(v, outcome.threshold);
  }
  return outcome;
}

void select_by_threshold(std::span<const float> v, std::size_t k, double sample,
                         const CounterRng& rng, std::size_t offset,
                         std::vector<std::size_t>& selected, std::vector<float>& scratch,
                         std::vector<std::uint32_t>& magnitude_scratch) {
  if (k == 0) return;
  const double estimate = estimate_threshold(v, k, sample, rng, scratch);
  if (estimate > 0) {
    const ThresholdOutcome outcome = adjust_threshold(v, estimate, k);
    const auto count = static_cast<double>(outcome.count);
    if (count >= kDgcLower * static_cast<double>(k) && count <= kDgcRaise * static_cast<double>(k)) {
      for (std::size_t j = 0; j < v.size(); ++j) {
        if (static_cast<double>(std::abs(v[j])) >= outcome.threshold) selected.push_back(offset + j);
      }
      return;
    }
  }
  select_largest(v, k, offset, selected, magnitude_scratch);
}

}  // namespace qccl
