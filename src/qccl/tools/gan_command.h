// The command line of `qccl experiment qgenx-gan` (gan_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/gan/gan_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct GanCommand {
  GanExperimentConfig config;
  std::vector<std::string> codecs;  // empty: kGanDefaultCodecs
  LaunchOptions launch;
};

// Adds `qgenx-gan` under `experiment`.
CLI::App* add_gan_experiment(CLI::App& experiment, GanCommand& command);
int run_gan_command(GanCommand& command, int argc, char** argv);

}  // namespace qccl::tools
