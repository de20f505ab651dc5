// What the QSDP experiment measured: a row per variant and the report
// around them, which qsdp_output.h writes and qsdp_report.h prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/experiments/qsdp/qsdp_variants.h"
#include "qccl/training/train_config.h"

namespace qccl::tools {

struct QsdpRow {
  QsdpVariant variant;            // its codecs in canonical form
  engines::TrainSummary summary;  // rank 0's
  // The training thread's step: the sum of the medians of its parts (data,
  // compute, waiting, optimizer), in milliseconds.
  double step_ms = 0;
  // NaN where the reference variant did not run.
  double relative_perplexity_percent = 0;  // 100·(perplexity / baseline's − 1)
  double speedup_vs_fp32 = 0;              // fp32's step_ms / this step_ms
  double speedup_vs_baseline = 0;          // baseline's step_ms / this step_ms
};

struct QsdpReport {
  engines::TrainConfig train;  // the shared settings (codecs: the last variant's)
  int ranks = 0;
  std::size_t steps = 0;       // asked for; each summary has the steps it ran
  std::uint64_t refit = 0;     // the learned levels' refit period used
  std::string cpu;             // the machine's processor and core count
  std::vector<QsdpRow> rows;   // one per variant, in the order run
  std::vector<std::string> files;  // written by rank 0
};

}  // namespace qccl::tools
