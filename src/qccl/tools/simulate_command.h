// `qccl simulate allreduce`: a codec's compressed means of vectors the user
// dumped, on N in-process ranks (simulate.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/tools/simulate.h"

namespace qccl::tools {

struct SimulateCommand {
  SimulateConfig config;
  std::string algorithm = "ring";
};

// Adds `allreduce` under `simulate`.
CLI::App* add_simulate(CLI::App& simulate, SimulateCommand& command);
int run_simulate_command(SimulateCommand& command, int argc, char** argv);

}  // namespace qccl::tools
