// `qccl experiment intsgd-rounding`: IntSGD's random against deterministic
// rounding, the heuristic scale and SGD (experiments/intsgd/rounding_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/intsgd/rounding_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct RoundingCommand {
  RoundingExperimentConfig config;
  std::string models, variants, seeds = "1,2,3", merge;
  // Read into these, then into config.overrides (only when given).
  std::size_t steps = 0, eval_every = 0, batch = 0, hidden = 0, sequence_length = 0;
  double lr = 0;
  LaunchOptions launch;
};

// Adds `intsgd-rounding` under `experiment`.
CLI::App* add_rounding_experiment(CLI::App& experiment, RoundingCommand& command);
int run_rounding_command(RoundingCommand& command, int argc, char** argv);

// "1,2, 3" → {1, 2, 3}; InvalidArgument naming --seeds for an item that is
// not a non-negative integer.
std::vector<std::uint64_t> parse_seed_list(const std::string& text);

}  // namespace qccl::tools
