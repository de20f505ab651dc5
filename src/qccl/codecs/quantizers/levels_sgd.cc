#include "qccl/codecs/quantizers/levels_sgd.h"

#include <algorithm>
#include <cmath>

namespace qccl {
namespace {

// The statistics as weighted points: each occupied cell's weighted mean
// position and its weight, with the running total of the weights.
struct WeightedPoints {
  std::vector<double> position, cumulative;
  double total() const { return cumulative.empty() ? 0.0 : cumulative.back(); }
};

WeightedPoints weighted_points(const LevelStatistics& statistics) {
  constexpr std::size_t kMoments = 5;  // Σλ, Σλu, Σλu², count, Σu per cell
  const auto& sums = statistics.sums();
  WeightedPoints points;
  double total = 0;
  for (std::size_t c = 0; c * kMoments < sums.size(); ++c) {
    const double weight = sums[c * kMoments];
    if (!(weight > 0)) continue;
    total += weight;
    points.position.push_back(sums[c * kMoments + 1] / weight);
    points.cumulative.push_back(total);
  }
  return points;
}

// Sorted, strictly increasing, inside (0, 1) but for the fixed ends.
void restore_order(std::vector<double>& levels) {
  std::sort(levels.begin() + 1, levels.end() - 1);
  for (std::size_t j = 1; j + 1 < levels.size(); ++j) {
    levels[j] = std::max(levels[j], std::nextafter(levels[j - 1], 2.0));
  }
  for (std::size_t j = levels.size() - 1; j-- > 1;) {
    levels[j] = std::min(levels[j], std::nextafter(levels[j + 1], -1.0));
  }
}

}  // namespace

std::size_t closest_level(std::span<const double> levels, double u) {
  const auto above = std::upper_bound(levels.begin(), levels.end(), u);
  if (above == levels.begin()) return 0;
  if (above == levels.end()) return levels.size() - 1;
  const auto k = static_cast<std::size_t>(above - levels.begin());
  return u - levels[k - 1] <= levels[k] - u ? k - 1 : k;
}

std::vector<double> learn_levels_sgd(const LevelStatistics& statistics, std::span<const double> start,
                                     const CounterRng& rng, const LevelsSgdSettings& settings) {
  std::vector<double> levels(start.begin(), start.end());
  const auto points = weighted_points(statistics);
  const auto draws = static_cast<std::uint64_t>(std::llround(statistics.coordinates()));
  if (points.position.empty() || levels.size() < 3) return levels;
  const std::size_t batch = std::max<std::size_t>(settings.batch, 1);
  std::vector<std::size_t> closest(batch);
  std::vector<double> value(batch);
  for (std::uint64_t first = 0; first < draws; first += batch) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(batch, draws - first));
    for (std::size_t i = 0; i < n; ++i) {  // line 5, with the batch's starting levels
      const double target = static_cast<double>(rng.bits64(first + i) >> 11) * 0x1p-53 * points.total();
      const auto cell = std::min<std::size_t>(
          static_cast<std::size_t>(std::upper_bound(points.cumulative.begin(), points.cumulative.end(), target) -
                                   points.cumulative.begin()),
          points.position.size() - 1);
      value[i] = points.position[cell];
      closest[i] = closest_level(levels, value[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {  // line 6; the ends stay
      const std::size_t j = closest[i];
      if (j == 0 || j + 1 == levels.size()) continue;
      levels[j] -= settings.rate * (levels[j] - value[i]);
    }
    restore_order(levels);
  }
  return levels;
}

double nearest_rounding_error(const LevelStatistics& statistics, std::span<const double> levels) {
  const auto points = weighted_points(statistics);
  double error = 0, below = 0;
  for (std::size_t c = 0; c < points.position.size(); ++c) {
    const double u = points.position[c];
    const double d = levels[closest_level(levels, u)] - u;
    error += (points.cumulative[c] - below) * d * d;
    below = points.cumulative[c];
  }
  return error;
}

}  // namespace qccl
