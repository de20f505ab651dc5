#include "qccl/tools/timeline_command.h"

#include <iostream>

#include "qccl/tools/ranks.h"
#include "qccl/tools/step_timeline.h"

namespace qccl::tools {

CLI::App* add_timeline(CLI::App& bench, TimelineCommand& command) {
  auto* sub = bench.add_subcommand(
      "timeline", "each bucket's exchange and update in a `qccl train --log` file, medians over "
                  "its steps: which exchange is slow and what the step waits on at the end");
  sub->add_option("log", command.log, "the training log (JSON lines)")->required();
  sub->add_option("--skip", command.skip,
                  "leave out the first N steps taken (default 5; after a MergeComp plan, the "
                  "first N after it; steps skipped for NaN or Inf never count)");
  return sub;
}

int run_timeline_command(TimelineCommand& command, int, char**) {
  return exit_code_of([&] {
    print_step_timeline(std::cout, command.log, read_step_timeline(command.log, command.skip));
  });
}

}  // namespace qccl::tools
