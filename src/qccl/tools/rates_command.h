// `qccl experiment qgenx-rates`: Q-GenX Theorems 3-4, the gap of the
// ergodic average against T under absolute and relative noise, per codec
// (experiments/qgenx/qgenx_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "qccl/experiments/qgenx/qgenx_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct RatesCommand {
  RatesConfig config;
  std::vector<std::string> codecs;
  std::string noises = "absolute,relative";
  bool quick = false;
  LaunchOptions launch;
  CLI::App* app = nullptr;
};

// Adds `qgenx-rates` under `experiment`.
CLI::App* add_rates_experiment(CLI::App& experiment, RatesCommand& command);
int run_rates_command(RatesCommand& command, int argc, char** argv);

}  // namespace qccl::tools
