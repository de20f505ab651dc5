// Small statistics over measurements.
#pragma once

#include <algorithm>
#include <vector>

namespace qccl {

// The median of `values` (the mean of the middle two for an even count);
// 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size();
  return m % 2 ? values[m / 2] : 0.5 * (values[m / 2 - 1] + values[m / 2]);
}

}  // namespace qccl
