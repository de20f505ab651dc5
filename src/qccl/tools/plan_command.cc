#include "qccl/tools/plan_command.h"

#include "qccl/tools/codec_help.h"

namespace qccl::tools {

CLI::App* add_plan(CLI::App& app, TrainCommand& command) {
  auto* sub = app.add_subcommand(
      "plan", "MergeComp: profile a model's first steps, measure the codec and the network, "
              "and print the best partition of its tensors into buckets (libtorch)");
  add_train_options(*sub, command, TrainOptionSet::plan);
  sub->footer(codec_list());
  return sub;
}

int run_plan_command(TrainCommand& command, int argc, char** argv) {
  command.planning = true;
  return run_train_command(command, argc, argv);
}

}  // namespace qccl::tools
