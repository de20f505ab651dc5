// The axes of a plot panel: the range they show, fitted to the data, and
// their ticks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace qccl::tools {

struct AxisTick {
  double at = 0;  // on the axis's scale: the value, or its log10 on a log axis
  std::string text;
};

struct AxisRequest {
  bool log = false;
  double length = 300;              // pixels
  bool horizontal = true;           // tick labels side by side (else stacked)
  double font_size = 11;            // of the tick labels
  bool off_scale_outliers = false;  // see fit_axis
};

struct Axis {
  bool log = false;
  double low = 0, high = 1;  // the range shown, on the axis's scale
  std::vector<AxisTick> ticks;

  // The axis's scale of a data value: the value, or its log10.
  double scaled(double value) const;
  // Where a data value lies along the axis, 0 at `low` and 1 at `high`.
  double fraction(double value) const;
  // A value a log axis cannot show (not positive) or not finite.
  bool shows(double value) const;
};

// An axis over `values` (those it cannot show are ignored): the data's
// range with 5% to spare on each side (not crossing zero when the data
// does not), and round ticks whose labels do not collide. On a linear axis
// the ticks step by 1, 2 or 5 × 10^k; on a log axis they are powers of ten,
// 1-2-5 or 1…9 per decade, whichever gives at least three labels, else round
// values as on a linear axis. With `off_scale_outliers`, a few values far
// from all the others (a run that diverged) are left outside the range
// (majority_range), so that it fits the rest; they are off scale.
Axis fit_axis(std::vector<double> values, const AxisRequest& request);

// The range of `sorted` once a few values far from the rest are set
// apart: at most a quarter of the values on each side, split off where the
// gap to the rest is more than three times the rest's own span.
std::pair<double, double> majority_range(const std::vector<double>& sorted);

}  // namespace qccl::tools
