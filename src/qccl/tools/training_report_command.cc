#include "qccl/tools/training_report_command.h"

#include <iostream>

#include "qccl/tools/codec_comparison.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

CLI::App* add_training_report(CLI::App& bench, TrainingReportCommand& command) {
  auto* sub = bench.add_subcommand(
      "training-report", "turn a scripts/compare-codecs folder into comparison.md, .csv and .svg");
  sub->add_option("directory", command.directory, "the comparison's results folder")->required();
  return sub;
}

int run_training_report_command(TrainingReportCommand& command, int, char**) {
  return exit_code_of([&] {
    const std::string& directory = command.directory;
    const auto runs = load_comparison(directory);
    for (const auto& file : write_comparison_report(runs, directory)) {
      std::cout << "wrote " << file << "\n";
    }
    std::cout << "\n" << comparison_markdown(runs);
  });
}

}  // namespace qccl::tools
