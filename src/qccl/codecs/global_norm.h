// The global norm of Global-QSGD (Algorithm 1, line 1): every rank's local
// norm combined in the step's one exchange (the call check carries it), so
// that all ranks quantize on the same scale. The same exchange makes
// non-finite input on any rank visible to all.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/call_check.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

enum class NormKind {
  inf,  // (∞,∞)-mixed norm: the largest |x| over all ranks (the default)
  two,  // (2,2)-mixed norm: sqrt of the sum over ranks of ‖x_i‖²
};

std::string_view to_string(NormKind kind);

// This rank's contribution: max|x| (inf) or sum of x^2 (two); NaN if any
// element is NaN or Inf.
double local_norm_statistic(std::span<const float> data, NormKind kind);
// The norm of one rank's data alone.
double local_norm(std::span<const float> data, NormKind kind);
double local_norm_statistic(std::span<const double> data, NormKind kind);

// This rank's statistic (local_norm_statistic; NaN: not finite) as the
// statistics a step's call check carries: the ∞-norm combined by maximum,
// squared 2-norms per rank (summed in rank order, the same bits everywhere).
CallStatistics norm_statistics(double statistic, NormKind kind);
// The (q,p)-mixed norm of Definition 1 (q = p) over the ranks' inputs, from
// the statistics every rank gathered. If any rank's input holds NaN or Inf,
// throws NonFiniteError naming those ranks and `what` (the codec and step) —
// on every rank alike, since every rank gathered the same statistics.
double global_norm(const GatheredStatistics& gathered, NormKind kind, std::string_view what);

}  // namespace qccl
QCCL_API_END
