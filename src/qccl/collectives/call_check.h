// What the ranks exchange before a collective call moves data: the call's
// fingerprint, and — folded into the same round trip — statistics of the
// caller's data (a codec's local norm, whether its input is finite). One
// MAX allreduce of int64 values carries both, so a compressed step needs one
// latency-bound exchange before its data moves, not one for the norm and one
// per call check.
//
// Layout (int64, combined by MAX): the F fingerprint fields, their negations
// (max == -min iff the ranks agree), the kMaxValues statistics combined by
// maximum, then one row per rank — [non-finite flag, kRankValues values] —
// that only its rank fills (the others put INT64_MIN), so every rank learns
// every rank's row exactly. Doubles travel as order-preserving int64 images.
// The size depends on the rank count alone, so ranks whose calls differ still
// exchange the same number of bytes and find out.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "qccl/collectives/fingerprint.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// This rank's statistics for one call.
struct CallStatistics {
  static constexpr std::size_t kMaxValues = 2;
  static constexpr std::size_t kRankValues = 2;
  // Combined by their maximum over ranks (e.g. an ∞-norm).
  std::array<double, kMaxValues> maximum{};
  // Every rank's own values, returned to every rank (e.g. squared 2-norms,
  // summed in rank order so every rank gets the same bits).
  std::array<double, kRankValues> per_rank{};
  // False when this rank's data holds NaN or Inf; its values are then ignored.
  bool finite = true;
};

// Every rank's statistics, identical on every rank after the exchange.
struct GatheredStatistics {
  std::array<double, CallStatistics::kMaxValues> maximum{};  // over ranks with finite data
  std::vector<std::array<double, CallStatistics::kRankValues>> per_rank;  // by rank
  std::vector<int> nonfinite_ranks;  // ranks whose data held NaN or Inf
  // per_rank[r][k] summed over ranks r in rank order.
  double sum(std::size_t k) const;
};

// The exchange buffer for a call on `ranks` ranks: fingerprint fields (zero
// when `fingerprint` is null, i.e. unchecked) and this rank's statistics
// (neutral when null).
std::vector<std::int64_t> call_check_buffer(const Fingerprint* fingerprint,
                                            const CallStatistics* statistics, int ranks, int rank);
// After the MAX allreduce: whether every rank passed the same fingerprint.
bool fingerprints_agree(std::span<const std::int64_t> exchanged);
// After the MAX allreduce: every rank's statistics.
GatheredStatistics gathered_statistics(std::span<const std::int64_t> exchanged, int ranks);

}  // namespace qccl
QCCL_API_END
