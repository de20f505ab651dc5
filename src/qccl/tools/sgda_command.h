// `qccl experiment qgenx-sgda`: Q-GenX against quantized SGDA with the same
// quantizer, Q-GenX Appendix H.1 (experiments/qgenx/sgda_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/qgenx/sgda_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct SgdaCommand {
  SgdaConfig config;
  std::string methods = "qgenx-de,sgda,sgda-adaptive";
  std::string noises = "absolute,relative";
  LaunchOptions launch;
};

// Adds `qgenx-sgda` under `experiment`.
CLI::App* add_sgda_experiment(CLI::App& experiment, SgdaCommand& command);
int run_sgda_command(SgdaCommand& command, int argc, char** argv);

}  // namespace qccl::tools
