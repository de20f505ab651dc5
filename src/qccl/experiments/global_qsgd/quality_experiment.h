// `qccl experiment global-qsgd-quality`: Global-QSGD §9, Table 4 (model
// quality after fixed-iteration training), its language-model column, at
// this machine's scale. The paper trains Transformer-XL on WikiText-103
// with Adam on 4 GPUs and reports test perplexity, mean ± sd over 3 seeds,
// for no quantization, linear dithering with 8 and 4 bits and exponential
// dithering with 8 bits. Here the GPT on the fortunes, with Adam, on 4
// ranks (the paper's workers) is trained once per variant
// (quality_variants.h) and seed by the grid of variant_grid.h; every
// variant of a seed starts from the same weights and data order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/experiments/intsgd/rounding_results.h"
#include "qccl/experiments/variant_grid.h"

namespace qccl::tools {

// The GPT's settings unless the command line changes them, sized so that
// the default four variants × 3 seeds finish in about 13 minutes of 2
// cores on 4 in-process ranks (docs/global-qsgd.md).
RoundingModelPlan quality_model_defaults();

struct QualityExperimentConfig {
  RoundingModelPlan plan = quality_model_defaults();
  std::vector<std::string> variants;  // empty: fp32, linear-8, linear-4, exp-8
  std::vector<std::uint64_t> seeds{1, 2, 3};
  bool progress = true;
  std::string output;                 // directory for global-qsgd-quality.*; empty: none
};

// The plan as the runs use it: the warm-up a tenth of the steps.
RoundingModelPlan quality_plan(const QualityExperimentConfig& config);

// Checks variants, seeds, steps and every training setting before any
// rank starts; throws InvalidArgument naming the option and what is valid.
void validate(const QualityExperimentConfig& config);

// Trains every seed × variant on every rank of `comm`; rank 0 writes the
// files into config.output and every rank gets the report.
RoundingReport run_quality_experiment(Communicator& comm, const QualityExperimentConfig& config);

}  // namespace qccl::tools
