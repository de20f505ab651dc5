#include "qccl/experiments/qgenx/dual_exchange.h"

#include <cmath>

#include "qccl/collectives/call_check.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"

namespace qccl::vi {

DualExchange::DualExchange(Communicator& comm, Codec& codec, CollectiveOptions collective,
                           EncodedBitsHook encoded_bits, std::size_t dimension)
    : comm_(comm), codec_(codec), collective_(std::move(collective)),
      encoded_bits_(std::move(encoded_bits)), d_(dimension), wire_(dimension, 0.0f),
      wire_own_(dimension, 0.0f) {
  codec_.check_supported(CodecOperation::allreduce_mean);
}

void DualExchange::mean(std::span<const double> v, std::span<double> mean, std::span<double> own,
                        ExchangeCounts& counts) {
  for (std::size_t i = 0; i < d_; ++i) wire_[i] = static_cast<float>(v[i]);
  codec_.allreduce_mean(comm_, wire_, collective_, wire_own_);
  for (std::size_t i = 0; i < d_; ++i) {
    mean[i] = wire_[i];
    own[i] = wire_own_[i];
  }
  ++counts.vector_exchanges;
  const EncodedBits bits = encoded_bits_
                               ? encoded_bits_(codec_, d_)
                               : EncodedBits{8.0 * static_cast<double>(codec_.wire_bytes(d_)), NAN};
  counts.encoded_bits += bits.bits;
  counts.bound_bits += bits.bound;
}

// Every rank's value travels in its own row of one call check (exact: the
// doubles are exchanged as order-preserving integers), and every rank sums
// the rows in rank order, so the sum has the same bits everywhere.
double DualExchange::sum_over_ranks(
    double local, std::string_view operation, std::uint64_t iteration,
    const std::function<std::string(const std::string& ranks)>& nonfinite_message) {
  CallStatistics mine;
  mine.per_rank[0] = local;
  mine.finite = std::isfinite(local);
  Fingerprint fingerprint(operation);
  fingerprint.add("iteration", static_cast<std::int64_t>(iteration));
  CollectiveCall call(comm_, fingerprint, comm_.timeout(collective_.timeout), &mine);
  const GatheredStatistics& all = call.statistics();
  if (!all.nonfinite_ranks.empty()) {
    std::string ranks;
    for (int r : all.nonfinite_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    throw NonFiniteError(nonfinite_message(ranks));
  }
  return all.sum(0);
}

// The checksum travels as two exact doubles (53 high bits, 11 low bits) in
// this rank's row of one call check.
void DualExchange::check_replicas(std::uint64_t checksum, std::string_view operation,
                                  std::uint64_t iteration, const std::string& where) {
  CallStatistics statistics;
  statistics.per_rank[0] = static_cast<double>(checksum >> 11);
  statistics.per_rank[1] = static_cast<double>(checksum & 0x7FF);
  Fingerprint fingerprint(operation);
  fingerprint.add("iteration", static_cast<std::int64_t>(iteration));
  CollectiveCall call(comm_, fingerprint, comm_.timeout(collective_.timeout), &statistics);
  const auto& rows = call.statistics().per_rank;
  std::string differ;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r] != rows[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!differ.empty()) {
    throw MismatchError(where + ": the iterates of rank(s) " + differ +
                        " differ from rank 0's; the replicas diverged (a codec whose "
                        "result is not identical on every rank?)");
  }
}

}  // namespace qccl::vi
