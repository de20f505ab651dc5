// Fitting a power law y ≈ C·x^slope by least squares on (log x, log y): the
// experiments' estimates of the exponents of Gap(T) and of Gap(K) (Q-GenX
// Theorems 3 and 4 predict T^−½·K^−½ under absolute noise and T^−1·K^−1
// under relative noise).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

namespace qccl::vi {

struct PowerFit {
  double slope = 0;
  double intercept = 0;  // log C
  // The slope's standard error, √(RSS/(n − 2)/Σ(log x − mean)²), from the
  // residuals of the fit; NaN with two points (no residual degree of freedom).
  double slope_error = 0;
  std::size_t points = 0;
};

// InvalidArgument unless at least two points have x > 0, y > 0 and two
// distinct x; points with x ≤ 0 or y ≤ 0 are refused too (a log-log fit of
// them has no meaning), naming the first.
PowerFit fit_power_law(std::span<const std::pair<double, double>> points);

}  // namespace qccl::vi
