// `qccl experiment qgenx-workers`: Q-GenX's gap against the number of
// workers K under absolute and relative noise, K in process
// (experiments/qgenx/workers_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "qccl/experiments/qgenx/workers_experiment.h"

namespace qccl::tools {

struct WorkersCommand {
  WorkersConfig config;
  std::string workers = "1,2,4,8,16";
  std::vector<std::string> codecs;
  std::string noises = "absolute,relative";
  std::string algorithm = "ring";
  CLI::App* app = nullptr;
};

// Adds `qgenx-workers` under `experiment`.
CLI::App* add_workers_experiment(CLI::App& experiment, WorkersCommand& command);
int run_workers_command(WorkersCommand& command, int argc, char** argv);

}  // namespace qccl::tools
