// `qccl experiment intsgd-logreg`: IntSGD Figure 6, IntGD against IntDIANA
// and VR-IntDIANA on logistic regression (experiments/intsgd/intsgd_experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/experiments/intsgd/intsgd_experiment.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct LogregCommand {
  LogregConfig config;
  std::string methods = "intgd,intdiana,vr-intdiana";
  LaunchOptions launch;
};

// Adds `intsgd-logreg` under `experiment`.
CLI::App* add_logreg_experiment(CLI::App& experiment, LogregCommand& command);
int run_logreg_command(LogregCommand& command, int argc, char** argv);

}  // namespace qccl::tools
