#include "qccl/codecs/global_norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qccl/codecs/kernels.h"
#include "qccl/common/errors.h"

namespace qccl {

std::string_view to_string(NormKind kind) { return kind == NormKind::inf ? "inf" : "2"; }

double local_norm_statistic(std::span<const float> data, NormKind kind) {
  const std::uint32_t largest = kernels::max_abs_bits(data.data(), data.size());
  if (largest >= 0x7F800000U) return std::numeric_limits<double>::quiet_NaN();  // Inf or NaN
  if (kind == NormKind::two) return kernels::sum_of_squares(data.data(), data.size());
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

namespace {

// Combines the ranks' statistics (NaN: non-finite input) into the norm, as
// one checked call whose exchange carries them.
double exchange_statistic(Communicator& comm, double statistic, std::size_t count, NormKind kind,
                          std::string_view what, Timeout timeout) {
  CallStatistics local;
  local.finite = !std::isnan(statistic);
  if (local.finite) {
    if (kind == NormKind::inf) local.maximum[0] = statistic;
    else local.per_rank[0] = statistic;
  }
  Fingerprint fingerprint("global norm");
  fingerprint.add_text("norm", to_string(kind))
      .add("element count", static_cast<std::int64_t>(count))
      .add_text("codec", what);
  const CollectiveCall call(comm, std::move(fingerprint), timeout, &local);
  const GatheredStatistics& gathered = call.statistics();
  std::string bad;
  for (int r : gathered.nonfinite_ranks) bad += (bad.empty() ? "" : ", ") + std::to_string(r);
  if (!bad.empty()) {
    throw NonFiniteError(std::string(what) + ": NaN or Inf in the input of rank(s) " + bad +
                         "; nothing was communicated. Check the loss and learning rate, or "
                         "skip this step");
  }
  return kind == NormKind::inf ? gathered.maximum[0] : std::sqrt(gathered.sum(0));
}

}  // namespace

double global_norm(Communicator& comm, std::span<const float> data, NormKind kind,
                   std::string_view what, Timeout timeout) {
  return exchange_statistic(comm, local_norm_statistic(data, kind), data.size(), kind, what,
                            timeout);
}

double global_norm(Communicator& comm, std::span<const double> data, NormKind kind,
                   std::string_view what, Timeout timeout) {
  return exchange_statistic(comm, local_norm_statistic(data, kind), data.size(), kind, what,
                            timeout);
}

}  // namespace qccl
