// `qccl bench report DIR`: a scripts/bench-suite folder turned into
// results.md, suite.json and SVG plots (suite_report.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace qccl::tools {

struct ReportCommand {
  std::string directory;
};

CLI::App* add_report(CLI::App& bench, ReportCommand& command);
int run_report_command(ReportCommand& command, int argc, char** argv);

}  // namespace qccl::tools
