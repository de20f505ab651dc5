#include "qccl/collectives/call_check.h"

#include <bit>
#include <cmath>
#include <limits>

namespace qccl {
namespace {

constexpr std::size_t kFields = Fingerprint::kMaxFields;
constexpr std::size_t kRow = 1 + CallStatistics::kRankValues;
constexpr std::int64_t kNothing = std::numeric_limits<std::int64_t>::min();

// Doubles as int64 with the same order: non-negative doubles keep their bits
// (IEEE order is integer order there); negative ones flip all but the sign
// bit, which reverses their order and keeps them below every non-negative.
std::int64_t ordered(double value) {
  const auto bits = std::bit_cast<std::int64_t>(value);
  return bits >= 0 ? bits : bits ^ std::numeric_limits<std::int64_t>::max();
}
double from_ordered(std::int64_t image) {
  return std::bit_cast<double>(image >= 0 ? image
                                          : image ^ std::numeric_limits<std::int64_t>::max());
}

std::size_t statistics_offset() { return 2 * kFields; }
std::size_t rows_offset() { return statistics_offset() + CallStatistics::kMaxValues; }

}  // namespace

double GatheredStatistics::sum(std::size_t k) const {
  double total = 0;
  for (const auto& row : per_rank) total += row[k];
  return total;
}

std::vector<std::int64_t> call_check_buffer(const Fingerprint* fingerprint,
                                            const CallStatistics* statistics, int ranks,
                                            int rank) {
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::int64_t> buffer(rows_offset() + n * kRow, kNothing);
  for (std::size_t i = 0; i < 2 * kFields; ++i) buffer[i] = 0;
  if (fingerprint != nullptr) {
    for (std::size_t i = 0; i < fingerprint->field_count(); ++i) {
      buffer[i] = fingerprint->field_value(i);
      buffer[kFields + i] = -fingerprint->field_value(i);
    }
  }
  std::int64_t* row = buffer.data() + rows_offset() + static_cast<std::size_t>(rank) * kRow;
  const bool finite = statistics == nullptr || statistics->finite;
  row[0] = finite ? 0 : 1;
  for (std::size_t k = 0; k < CallStatistics::kRankValues; ++k) {
    row[1 + k] = finite && statistics ? ordered(statistics->per_rank[k]) : ordered(0.0);
  }
  if (finite && statistics != nullptr) {
    for (std::size_t k = 0; k < CallStatistics::kMaxValues; ++k) {
      buffer[statistics_offset() + k] = ordered(statistics->maximum[k]);
    }
  }
  return buffer;
}

bool fingerprints_agree(std::span<const std::int64_t> exchanged) {
  for (std::size_t i = 0; i < kFields; ++i) {
    if (exchanged[i] != -exchanged[kFields + i]) return false;
  }
  return true;
}

GatheredStatistics gathered_statistics(std::span<const std::int64_t> exchanged, int ranks) {
  GatheredStatistics gathered;
  for (std::size_t k = 0; k < CallStatistics::kMaxValues; ++k) {
    const std::int64_t image = exchanged[statistics_offset() + k];
    // No rank with finite data: nothing to combine.
    gathered.maximum[k] = image == kNothing ? 0.0 : from_ordered(image);
  }
  const auto n = static_cast<std::size_t>(ranks);
  gathered.per_rank.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    const std::int64_t* row = exchanged.data() + rows_offset() + r * kRow;
    if (row[0] != 0) gathered.nonfinite_ranks.push_back(static_cast<int>(r));
    for (std::size_t k = 0; k < CallStatistics::kRankValues; ++k) {
      gathered.per_rank[r][k] = from_ordered(row[1 + k]);
    }
  }
  return gathered;
}

}  // namespace qccl
