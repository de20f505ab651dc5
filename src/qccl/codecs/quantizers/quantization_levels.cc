#include "qccl/codecs/quantizers/quantization_levels.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {

double lq_norm(std::span<const float> v, NormOrder q) {
  double largest = 0;
  for (float x : v) largest = std::max(largest, static_cast<double>(std::fabs(x)));
  if (q == kInfinityNorm || largest == 0 || !std::isfinite(largest)) return largest;
  double sum = 0;
  if (q == 2) {
    for (float x : v) {
      const double r = x / largest;
      sum += r * r;
    }
    return largest * std::sqrt(sum);
  }
  for (float x : v) sum += std::pow(std::fabs(x) / largest, q);
  return largest * std::pow(sum, 1.0 / q);
}

std::vector<double> uniform_levels(int s) {
  std::vector<double> levels(static_cast<std::size_t>(s) + 2);
  for (int j = 0; j <= s + 1; ++j) levels[static_cast<std::size_t>(j)] = static_cast<double>(j) / (s + 1);
  return levels;
}

std::vector<double> exponential_levels(int s) {
  std::vector<double> levels{0.0};
  for (int j = s; j >= 1; --j) levels.push_back(std::ldexp(1.0, -j));
  levels.push_back(1.0);
  return levels;
}

void check_levels(std::span<const double> levels) {
  const auto fail = [](const std::string& why) {
    throw InvalidArgument("quantization levels " + why +
                          ": they must run 0 = l_0 < l_1 < ... < l_(s+1) = 1");
  };
  if (levels.size() < 2) fail("are fewer than two");
  if (levels.front() != 0.0 || levels.back() != 1.0) fail("do not start at 0 and end at 1");
  for (std::size_t j = 1; j < levels.size(); ++j) {
    if (!(levels[j] > levels[j - 1])) fail("do not increase at index " + std::to_string(j));
  }
}

LevelIndex::LevelIndex(std::span<const double> levels)
    : levels_(levels.begin(), levels.end()), start_(kCells) {
  check_levels(levels_);
  for (std::size_t j = 0; j + 1 < levels_.size(); ++j) {
    inverse_width_.push_back(1.0 / (levels_[j + 1] - levels_[j]));
  }
  std::size_t t = 0;
  for (std::size_t c = 0; c < kCells; ++c) {
    const double left = static_cast<double>(c) / kCells;  // exact
    while (t + 2 < levels_.size() && levels_[t + 1] <= left) ++t;
    start_[c] = t;
  }
}

double level_variance(double u, const LevelIndex& index) {
  const std::size_t t = index.lower(u);
  const auto levels = index.levels();
  return (levels[t + 1] - u) * (u - levels[t]);
}

double quantization_variance(std::span<const float> v, std::span<const double> levels,
                             std::size_t bucket, NormOrder q) {
  const LevelIndex index(levels);
  const std::size_t size = bucket == 0 ? std::max<std::size_t>(v.size(), 1) : bucket;
  double total = 0;
  for (std::size_t first = 0; first < v.size(); first += size) {
    const auto part = v.subspan(first, std::min(size, v.size() - first));
    const double norm = lq_norm(part, q);
    if (norm == 0) continue;
    double sum = 0;
    for (float x : part) sum += level_variance(std::min(1.0, std::fabs(x) / norm), index);
    total += norm * norm * sum;
  }
  return total;
}

double theorem1_variance_factor(std::span<const double> levels, std::size_t d, NormOrder q) {
  check_levels(levels);
  double ratio = 1;  // ℓ̄ over the interior levels
  for (std::size_t j = 1; j + 1 < levels.size(); ++j) ratio = std::max(ratio, levels[j + 1] / levels[j]);
  const double m = q == kInfinityNorm ? 2.0 : std::min(q, 2);
  const double l1 = levels[1];
  const double dd = static_cast<double>(d);
  const double threshold = std::pow(2.0 / l1, m);
  const double small = dd <= threshold ? 0.25 * l1 * l1 * std::pow(dd, 2.0 / m)
                                       : l1 * std::pow(dd, 1.0 / m) - 1.0;
  return (ratio + 1.0 / ratio) / 4.0 - 0.5 + small;
}

}  // namespace qccl
