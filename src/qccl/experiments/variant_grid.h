// Trains a grid of runs, every model × seed × variant, each by the
// data-parallel engine on all ranks of one communicator: the loop behind
// `qccl experiment intsgd-rounding` and `qccl experiment
// global-qsgd-quality`. Every variant of a seed starts from the same
// initial weights, data order and settings; only the gradients' codec
// differs. Each run is evaluated every `eval_every` steps, and a run whose
// gradients become non-finite is recorded as diverged while the others go
// on.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/experiments/intsgd/rounding_results.h"
#include "qccl/experiments/intsgd/rounding_variants.h"
#include "qccl/training/train_config.h"

namespace qccl::tools {

// A model's run: its training settings and how long, evaluated how often.
struct RoundingModelPlan {
  engines::TrainConfig train;
  std::size_t steps = 0, eval_every = 0;
};

// The settings of a plan as the results record them (and merging compares).
nlohmann::json plan_settings(const RoundingModelPlan& plan);

// The trainer's settings for one run: the plan's, with the variant's codec
// and the seed, in eval_every-step chunks (one "epoch" per evaluation).
engines::TrainConfig run_config(const RoundingModelPlan& plan, const RoundingVariant& variant,
                                std::uint64_t seed);

// Refuses an empty seed list or a seed named twice (InvalidArgument naming
// --seeds), a zero step count, an eval_every that does not divide the
// steps, and any run setting engines::validate refuses.
void validate_grid(const std::vector<RoundingModelPlan>& plans,
                   const std::vector<RoundingVariant>& variants,
                   const std::vector<std::uint64_t>& seeds);

struct VariantGrid {
  std::string experiment;  // names the files: DIR/<experiment>.{csv,json,svg}
  std::string baseline;    // the variant every row is compared with, seed by seed
  std::vector<RoundingModelPlan> plans;
  std::vector<RoundingVariant> variants;
  std::vector<std::uint64_t> seeds;
  bool progress = true;    // rank 0: a line per finished run on stderr
  std::string output;      // directory; empty: no files
};

// Runs the grid (validated, and compared across ranks, before any run);
// rank 0 writes the files and every rank returns the report.
RoundingReport run_variant_grid(Communicator& comm, const VariantGrid& grid);

}  // namespace qccl::tools
