// `qccl model`: the Global-QSGD §7 performance model fitted to a
// benchmark-suite folder, its error, and predictions for a link
// (model_report.h); with --scaling, the model of hosts of several ranks
// fitted to a scripts/bench-scaling folder, checked, and its predictions
// from a few ranks to thousands (scaling_report.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/tools/model_report.h"
#include "qccl/tools/scaling_report.h"

namespace qccl::tools {

struct ModelCommand {
  ModelCommandConfig config;
  std::string link_rate, size = "64M";
  ScalingConfig scaling;
  std::vector<std::string> scaling_rates, workloads;
};

CLI::App* add_model(CLI::App& app, ModelCommand& command);
int run_model(ModelCommand& command, int argc, char** argv);

}  // namespace qccl::tools
