// The global norm of Global-QSGD (Algorithm 1, line 1): every rank's local
// norm combined by one small allreduce, so that all ranks quantize on the same
// scale. The same exchange makes non-finite input on any rank visible to all.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"

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

// Returns the (q,p)-mixed norm of Definition 1 (q = p) over the ranks' `data`.
// If any rank's data holds NaN or Inf, every rank throws NonFiniteError
// naming those ranks and `what` (e.g. the codec and step). One collective
// call whose call check carries the statistics (CollectiveCall), so it
// cannot pair with another rank's different call. Codec steps fold the same
// exchange into their own call instead (codec.h).
double global_norm(Communicator& comm, std::span<const float> data, NormKind kind,
                   std::string_view what, Timeout timeout);
// The same for fp64 data (the convex experiments).
double global_norm(Communicator& comm, std::span<const double> data, NormKind kind,
                   std::string_view what, Timeout timeout);

}  // namespace qccl
