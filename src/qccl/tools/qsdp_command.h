// The command line of `qccl experiment qsdp` (qsdp_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/qsdp/qsdp_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct QsdpCommand {
  QsdpExperimentConfig config;
  std::string variants;  // comma-separated names; empty: every variant
  std::string seeds;     // comma-separated seeds; empty: --seed alone
  LaunchOptions launch;
};

// Adds `qsdp` under `experiment`.
CLI::App* add_qsdp_experiment(CLI::App& experiment, QsdpCommand& command);
int run_qsdp_command(QsdpCommand& command, int argc, char** argv);

// "W8G8, fp32 ,W4G4" → {"W8G8", "fp32", "W4G4"}: split at commas, spaces
// trimmed, empty items dropped.
std::vector<std::string> split_variant_list(const std::string& text);

}  // namespace qccl::tools
