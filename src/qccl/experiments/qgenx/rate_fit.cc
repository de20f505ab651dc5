#include "qccl/experiments/qgenx/rate_fit.h"

#include <cmath>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::vi {

PowerFit fit_power_law(std::span<const std::pair<double, double>> points) {
  if (points.size() < 2) throw InvalidArgument("a power-law fit needs at least two points");
  double sx = 0, sy = 0;
  for (const auto& [x, y] : points) {
    if (!(x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y))) {
      throw InvalidArgument("a power-law fit needs positive finite points; got (" +
                            std::to_string(x) + ", " + std::to_string(y) + ")");
    }
    sx += std::log(x);
    sy += std::log(y);
  }
  const double n = static_cast<double>(points.size());
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    const double u = std::log(x) - mx;
    sxx += u * u;
    sxy += u * (std::log(y) - my);
  }
  if (!(sxx > 0)) throw InvalidArgument("a power-law fit needs at least two distinct x");
  PowerFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.points = points.size();
  double residuals = 0;
  for (const auto& [x, y] : points) {
    const double r = std::log(y) - fit.intercept - fit.slope * std::log(x);
    residuals += r * r;
  }
  fit.slope_error = points.size() > 2 ? std::sqrt(residuals / (n - 2) / sxx) : NAN;
  return fit;
}

}  // namespace qccl::vi
