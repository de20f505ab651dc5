#include "qccl/tools/report_command.h"

#include <iostream>

#include "qccl/tools/ranks.h"
#include "qccl/tools/suite_data.h"
#include "qccl/tools/suite_report.h"

namespace qccl::tools {

CLI::App* add_report(CLI::App& bench, ReportCommand& command) {
  auto* sub = bench.add_subcommand(
      "report", "turn a scripts/bench-suite folder into results.md, suite.json and SVG plots");
  sub->add_option("directory", command.directory, "the suite's results folder")->required();
  return sub;
}

int run_report_command(ReportCommand& command, int, char**) {
  return exit_code_of([&] {
    const std::string& directory = command.directory;
    for (const auto& file : write_suite_report(load_suite(directory), directory)) {
      std::cout << "wrote " << file << "\n";
    }
  });
}

}  // namespace qccl::tools
