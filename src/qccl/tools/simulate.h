// `qccl simulate allreduce`: runs a codec's compressed allreduce on the
// in-process transport over vectors a researcher dumped (e.g. real
// gradients), and reports how far the results are from the exact mean.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "qccl/collectives/options.h"

namespace qccl::tools {

struct SimulateConfig {
  int ranks = 0;
  std::string codec;
  std::string input;   // ranks·d little-endian fp32, rank-major
  // Instead of an input file: d gradient-like values per rank, generated
  // from `seed` (magnitudes over 12 binades, differing per rank).
  std::size_t synthetic = 0;
  std::string output;  // rounds·d little-endian fp32: each round's mean
  int rounds = 1;
  std::uint64_t seed = 0;
  Algorithm algorithm = Algorithm::ring;
};

struct SimulateSummary {
  std::string codec;  // canonical spec
  int ranks = 0;
  std::size_t dimension = 0;
  int rounds = 0;
  double mean_squared_error = 0;     // over rounds and elements, vs the exact mean
  double relative_squared_error = 0;  // divided by the mean of the exact mean squared
  // E||result - exact mean||^2 per round, measured, and the codec's
  // published bound for these inputs (if it has one).
  double squared_error_per_round = 0;
  std::optional<double> variance_bound;
  double bytes_sent_per_rank = 0;     // per round, the most of any rank
  double fp32_ring_bytes = 0;         // what an fp32 ring allreduce sends per rank
};

// Reads, runs and writes; the output file appears only when complete.
SimulateSummary run_simulation(const SimulateConfig& config);
void print_summary(std::ostream& out, const SimulateSummary& summary);

}  // namespace qccl::tools
