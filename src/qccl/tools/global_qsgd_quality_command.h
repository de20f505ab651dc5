// `qccl experiment global-qsgd-quality`: Global-QSGD Table 4's language-model
// column on the GPT (experiments/global_qsgd/quality_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/global_qsgd/quality_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct QualityCommand {
  QualityExperimentConfig config;
  std::string variants, seeds = "1,2,3", merge;
  LaunchOptions launch;
};

// Adds `global-qsgd-quality` under `experiment`.
CLI::App* add_quality_experiment(CLI::App& experiment, QualityCommand& command);
int run_quality_command(QualityCommand& command, int argc, char** argv);

}  // namespace qccl::tools
