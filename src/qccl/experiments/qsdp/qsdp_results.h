// What the QSDP experiment measured: a row per variant and the report
// around them, which qsdp_output.h writes and qsdp_report.h prints.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qccl/common/statistics.h"
#include "qccl/experiments/qsdp/qsdp_variants.h"
#include "qccl/training/train_config.h"

namespace qccl::tools {

struct QsdpRow {
  QsdpVariant variant;            // its codecs in canonical form
  engines::TrainSummary summary;  // rank 0's, of the first seed
  // Per seed, in the order of QsdpReport::seeds: the test perplexity of
  // the fp32 master weights, and of the weights the oracles computed with
  // (QSDP's Q^w(W); NaN where the weights travel unquantized).
  std::vector<double> perplexities, computed_perplexities;
  // Per seed, 100·(perplexity / the baseline's of the same seed − 1), of
  // the master weights and of Q^w(W) (NaN without a baseline or Q^w).
  std::vector<double> relative_percents, computed_relative_percents;
  // The training thread's step: the sum of the medians of its parts (data,
  // compute, waiting, optimizer), in milliseconds.
  double step_ms = 0;
  // NaN where the reference variant did not run.
  double relative_perplexity_percent = 0;  // the mean of relative_percents
  double speedup_vs_fp32 = 0;              // fp32's step_ms / this step_ms
  double speedup_vs_baseline = 0;          // baseline's step_ms / this step_ms
};

// The mean and the sample standard deviation (0 for one value) of the
// finite values; NaN for none.
inline double mean_of(std::span<const double> values) {
  double sum = 0, n = 0;
  for (double v : values) {
    if (std::isfinite(v)) sum += v, n += 1;
  }
  return n > 0 ? sum / n : std::nan("");
}
inline double spread_of(std::span<const double> values) {
  const double mean = mean_of(values);
  double squares = 0, n = 0;
  for (double v : values) {
    if (std::isfinite(v)) squares += (v - mean) * (v - mean), n += 1;
  }
  return n > 1 ? std::sqrt(squares / (n - 1)) : (n == 1 ? 0.0 : std::nan(""));
}

// How wide the blocks' weight matrices spread at the end of a run
// ((max − min)/σ_bulk, TrainSummary::weight_ranges of the parameters named
// "blocks.…"): the median over them and the widest. NaN where none was
// measured.
struct WeightSpread {
  double median = std::nan("");
  double widest = std::nan("");
};
inline WeightSpread block_weight_spread(const engines::TrainSummary& summary) {
  std::vector<double> values;
  for (const auto& range : summary.weight_ranges) {
    if (range.name.starts_with("blocks.")) values.push_back(range.range_over_bulk_sd);
  }
  if (values.empty()) return {};
  return {qccl::median(values), *std::max_element(values.begin(), values.end())};
}

struct QsdpReport {
  engines::TrainConfig train;  // the shared settings (codecs: the last variant's)
  int ranks = 0;
  std::size_t steps = 0;       // asked for; each summary has the steps it ran
  std::uint64_t refit = 0;     // the learned levels' first fit (schedule=paper)
  std::vector<std::uint64_t> seeds;  // every variant trains once per seed
  std::string cpu;             // the machine's processor and core count
  std::vector<QsdpRow> rows;   // one per variant, in the order run
  std::vector<std::string> files;  // written by rank 0
};

}  // namespace qccl::tools
