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

// Combines the ranks' statistics (NaN: non-finite input) into the norm.
double exchange_statistic(Communicator& comm, double statistic, std::size_t count, NormKind kind,
                          std::string_view what, Timeout timeout) {
  // [local statistic, one non-finite flag per rank]; MAX combines both for
  // the ∞-norm, SUM for the 2-norm (each flag is set by one rank only).
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<double> values(1 + n, 0.0);
  const bool finite = !std::isnan(statistic);
  values[0] = finite ? statistic : 0.0;
  values[1 + static_cast<std::size_t>(comm.rank())] = finite ? 0.0 : 1.0;

  Fingerprint fingerprint("global norm");
  fingerprint.add_text("norm", to_string(kind))
      .add("element count", static_cast<std::int64_t>(count))
      .add_text("codec", what);
  comm.run(fingerprint, timeout, [&](int) {
    allreduce_values<double>(comm.transport(), values,
                             kind == NormKind::inf ? ReduceOp::max : ReduceOp::sum, timeout);
  });

  std::string bad;
  for (std::size_t r = 0; r < n; ++r) {
    if (values[1 + r] != 0.0) bad += (bad.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!bad.empty()) {
    throw NonFiniteError(std::string(what) + ": NaN or Inf in the input of rank(s) " + bad +
                          "; nothing was communicated. Check the loss and learning rate, or "
                          "skip this step");
  }
  return kind == NormKind::inf ? values[0] : std::sqrt(values[0]);
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
