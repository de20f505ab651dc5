#include "qccl/codecs/global_norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/common/errors.h"

namespace qccl {

std::string_view to_string(NormKind kind) { return kind == NormKind::inf ? "inf" : "2"; }

double local_norm_statistic(std::span<const float> data, NormKind kind) {
  constexpr double kNonFinite = std::numeric_limits<double>::quiet_NaN();
  if (kind == NormKind::two) {
    const auto both = kernels::sum_of_squares_and_max_abs_bits(data.data(), data.size());
    return both.largest_bits >= 0x7F800000U ? kNonFinite : both.squares;  // Inf or NaN
  }
  const std::uint32_t largest = kernels::max_abs_bits(data.data(), data.size());
  if (largest >= 0x7F800000U) return kNonFinite;
  float value;
  std::memcpy(&value, &largest, 4);
  return value;
}

double local_norm(std::span<const float> data, NormKind kind) {
  const double statistic = local_norm_statistic(data, kind);
  return kind == NormKind::inf ? statistic : std::sqrt(statistic);
}

double local_norm_statistic(std::span<const double> data, NormKind kind) {
  double statistic = 0;
  for (double x : data) {
    if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
    statistic = kind == NormKind::inf ? std::max(statistic, std::abs(x)) : statistic + x * x;
  }
  return statistic;
}

CallStatistics norm_statistics(double statistic, NormKind kind) {
  CallStatistics local;
  local.finite = !std::isnan(statistic);
  if (local.finite) {
    if (kind == NormKind::inf) local.maximum[0] = statistic;
    else local.per_rank[0] = statistic;
  }
  return local;
}

double global_norm(const GatheredStatistics& gathered, NormKind kind, std::string_view what) {
  if (!gathered.nonfinite_ranks.empty()) {
    std::string ranks;
    for (int r : gathered.nonfinite_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    throw NonFiniteError(std::string(what) + ": NaN or Inf in the input of rank(s) " + ranks +
                         "; nothing was communicated. Check the loss and learning rate, or "
                         "skip this step");
  }
  return kind == NormKind::inf ? gathered.maximum[0] : std::sqrt(gathered.sum(0));
}

}  // namespace qccl
