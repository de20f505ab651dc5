// Fitting a power law y ≈ C·x^slope by least squares on (log x, log y): the
// rates experiment's estimate of the exponent of Gap(T) (Q-GenX Theorems 3
// and 4 predict −½ under absolute noise and −1 under relative noise).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

namespace qccl::vi {

struct PowerFit {
  double slope = 0;
  double intercept = 0;  // log C
  std::size_t points = 0;
};

// InvalidArgument unless at least two points have x > 0, y > 0 and two
// distinct x; points with x ≤ 0 or y ≤ 0 are refused too (a log-log fit of
// them has no meaning), naming the first.
PowerFit fit_power_law(std::span<const std::pair<double, double>> points);

}  // namespace qccl::vi
