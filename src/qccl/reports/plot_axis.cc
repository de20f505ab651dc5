#include "qccl/reports/plot_axis.h"

#include <algorithm>
#include <cmath>

#include "qccl/reports/plot_text.h"

namespace qccl::tools {
namespace {

constexpr double kTickGap = 6;  // pixels between neighbouring tick labels

// The k <= limit such that the first k values of `v` lie furthest below
// the rest, by more than three times the rest's span (0 for none): with
// them, the rest would fill less than a quarter of the axis.
std::size_t low_outliers(const std::vector<double>& v, std::size_t limit) {
  std::size_t best = 0;
  double best_gap = 0;
  for (std::size_t k = 1; k <= limit && k < v.size(); ++k) {
    const double gap = v[k] - v[k - 1], rest = v.back() - v[k];
    if (gap > 3 * rest && gap > best_gap) {
      best = k;
      best_gap = gap;
    }
  }
  return best;
}

std::vector<double> multiples(double low, double high, double step) {
  std::vector<double> ticks;
  const double first = std::ceil(low / step - 1e-9), last = std::floor(high / step + 1e-9);
  for (double k = first; k <= last; ++k) ticks.push_back(k * step);
  return ticks;
}

double next_round_step(double step) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  const double mantissa = step / magnitude;
  return (mantissa < 1.5 ? 2 : mantissa < 3.5 ? 5 : 10) * magnitude;
}

// Ticks at the values given (on the data's scale), if their labels fit
// side by side (or one above the other) along the axis.
bool labels_fit(const std::vector<AxisTick>& ticks, const Axis& axis, const AxisRequest& request) {
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    const double apart = (ticks[i].at - ticks[i - 1].at) / (axis.high - axis.low) * request.length;
    const double needed = request.horizontal ? (text_width(ticks[i].text, request.font_size) +
                                                text_width(ticks[i - 1].text, request.font_size)) /
                                                   2
                                             : 1.05 * request.font_size;
    if (apart < needed + kTickGap) return false;
  }
  return true;
}

// Round values 1, 2 or 5 × 10^k apart: at least about six to the axis,
// fewer if their labels would collide.
std::vector<AxisTick> round_ticks(const Axis& axis, const AxisRequest& request) {
  const double low = axis.log ? std::pow(10.0, axis.low) : axis.low;
  const double high = axis.log ? std::pow(10.0, axis.high) : axis.high;
  double step = std::pow(10.0, std::floor(std::log10((high - low) / 6)));
  while ((high - low) / step > 7) step = next_round_step(step);
  for (;; step = next_round_step(step)) {
    std::vector<AxisTick> ticks;
    for (double v : multiples(low, high, step)) {
      if (axis.shows(v)) ticks.push_back({axis.scaled(v), tick_text(v, step)});
    }
    if (ticks.size() <= 1 || labels_fit(ticks, axis, request)) return ticks;
  }
}

// On a log axis, the values `mantissas` × 10^k inside it (for decades,
// every `stride`-th power). All are written as plain numbers, or all as
// "2e5" when one would need 5 digits or more.
std::vector<AxisTick> decade_ticks(const Axis& axis, const std::vector<double>& mantissas,
                                   int stride) {
  std::vector<std::pair<double, double>> at;  // (mantissa, power)
  for (double k = std::floor(axis.low); k <= std::ceil(axis.high); ++k) {
    if (std::fmod(k, stride) != 0) continue;
    for (double m : mantissas) {
      const double where = k + std::log10(m);
      if (where >= axis.low - 1e-9 && where <= axis.high + 1e-9) at.emplace_back(m, k);
    }
  }
  const bool exponents = std::any_of(at.begin(), at.end(),
                                     [](const auto& t) { return t.second >= 4 || t.second <= -4; });
  std::vector<AxisTick> ticks;
  for (const auto& [m, k] : at) {
    ticks.push_back({k + std::log10(m), exponents ? number_text(m) + "e" + number_text(k)
                                                  : number_text(m * std::pow(10.0, k))});
  }
  return ticks;
}

std::vector<AxisTick> log_ticks(const Axis& axis, const AxisRequest& request) {
  int stride = 1;
  while ((axis.high - axis.low) / stride > 8) ++stride;
  const std::vector<std::vector<AxisTick>> choices = {
      decade_ticks(axis, {1}, stride), decade_ticks(axis, {1, 2, 5}, 1),
      decade_ticks(axis, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 1)};
  const std::vector<AxisTick>* densest = nullptr;
  for (const auto& ticks : choices) {
    if (!labels_fit(ticks, axis, request)) continue;
    if (ticks.size() >= 3) return ticks;
    if (densest == nullptr || ticks.size() > densest->size()) densest = &ticks;
  }
  const auto round = round_ticks(axis, request);
  return densest != nullptr && densest->size() >= round.size() ? *densest : round;
}

}  // namespace

double Axis::scaled(double value) const { return log ? std::log10(value) : value; }

double Axis::fraction(double value) const { return (scaled(value) - low) / (high - low); }

bool Axis::shows(double value) const { return std::isfinite(value) && (!log || value > 0); }

std::pair<double, double> majority_range(const std::vector<double>& sorted) {
  std::vector<double> v = sorted;
  const std::size_t limit = v.size() / 4;
  std::size_t cut_low = 0, cut_high = 0;
  for (int round = 0; round < 2; ++round) {  // each side, then again once the other is cut
    const std::size_t low = low_outliers(v, limit - cut_low);
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(low));
    cut_low += low;
    std::vector<double> mirrored(v.rbegin(), v.rend());
    for (double& x : mirrored) x = -x;
    const std::size_t high = low_outliers(mirrored, limit - cut_high);
    v.resize(v.size() - high);
    cut_high += high;
  }
  return {v.front(), v.back()};
}

Axis fit_axis(std::vector<double> values, const AxisRequest& request) {
  Axis axis;
  axis.log = request.log;
  std::erase_if(values, [&](double v) { return !axis.shows(v); });
  for (double& v : values) v = axis.scaled(v);
  std::sort(values.begin(), values.end());
  if (values.empty()) values = {0.0, 1.0};
  auto [low, high] = request.off_scale_outliers ? majority_range(values)
                                                : std::pair{values.front(), values.back()};
  const double spare = high > low ? 0.05 * (high - low)
                       : axis.log ? 0.05
                       : low != 0 ? 0.02 * std::abs(low)
                                  : 1.0;
  axis.low = low - spare;
  axis.high = high + spare;
  if (!axis.log && low >= 0 && axis.low < 0) axis.low = 0;
  if (!axis.log && high <= 0 && axis.high > 0) axis.high = 0;
  axis.ticks = axis.log ? log_ticks(axis, request) : round_ticks(axis, request);
  return axis;
}

}  // namespace qccl::tools
