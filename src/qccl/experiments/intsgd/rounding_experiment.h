// `qccl experiment intsgd-rounding`: IntSGD §5 (Figure 1, Tables 2–3) at
// this machine's scale. Each model (the CNN on Fashion-MNIST standing in
// for ResNet18 on CIFAR-10, the character LSTM on fortunes for the 3-layer
// LSTM on Wikitext-2) is trained on n ranks (16 by default, the paper's
// workers) once per variant and seed (rounding_variants.h) by the grid of
// variant_grid.h; the rows give the final test metric's mean and spread
// over the seeds, and its difference to SGD with the same seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/experiments/intsgd/rounding_results.h"
#include "qccl/experiments/variant_grid.h"

namespace qccl::tools {

// The models this experiment trains: cnn and char-lstm.
std::vector<std::string> rounding_model_names();

// The settings a model trains with unless the command line changes them
// (sized so that every default run fits about 25 minutes of 2 cores; see
// docs/intsgd.md). InvalidArgument for another model.
RoundingModelPlan rounding_model_defaults(const std::string& model);

// Settings that replace every model's default when given.
struct RoundingOverrides {
  std::optional<std::size_t> steps, eval_every, batch, hidden, sequence_length;
  std::optional<double> lr;
};

struct RoundingExperimentConfig {
  std::vector<std::string> models;          // empty: cnn and char-lstm
  std::vector<std::string> variants;        // empty: the default four
  std::vector<std::uint64_t> seeds{1, 2, 3};
  RoundingOverrides overrides;
  int threads = 1;                          // libtorch threads per rank
  Algorithm algorithm = Algorithm::ring;
  bool progress = true;
  std::string output;                       // directory for intsgd-rounding.*; empty: none
};

// Each model's plan, the defaults with the overrides applied.
std::vector<RoundingModelPlan> rounding_plans(const RoundingExperimentConfig& config);

// Checks names, seeds, steps and every training setting before any rank
// starts; throws InvalidArgument naming the option and what is valid.
void validate(const RoundingExperimentConfig& config);

// Trains every model × seed × variant on every rank of `comm` (all ranks
// with the same settings). A run whose gradients become non-finite is
// recorded as diverged and the others go on. Rank 0 writes the files into
// config.output and gets the full report.
RoundingReport run_rounding_experiment(Communicator& comm, const RoundingExperimentConfig& config);

}  // namespace qccl::tools
