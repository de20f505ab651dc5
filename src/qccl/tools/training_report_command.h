// `qccl bench training-report DIR`: a scripts/compare-codecs folder turned
// into comparison.md, .csv and .svg (codec_comparison.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace qccl::tools {

struct TrainingReportCommand {
  std::string directory;
};

CLI::App* add_training_report(CLI::App& bench, TrainingReportCommand& command);
int run_training_report_command(TrainingReportCommand& command, int argc, char** argv);

}  // namespace qccl::tools
