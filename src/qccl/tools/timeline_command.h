// `qccl bench timeline LOG`: each bucket's exchange and update in a training
// log, medians over its steps (step_timeline.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace qccl::tools {

struct TimelineCommand {
  std::string log;
  std::size_t skip = 5;
};

CLI::App* add_timeline(CLI::App& bench, TimelineCommand& command);
int run_timeline_command(TimelineCommand& command, int argc, char** argv);

}  // namespace qccl::tools
