#include "qccl/tools/plan_command.h"

namespace qccl::tools {

CLI::App* add_plan(CLI::App& app, TrainCommand& command) {
  auto* sub = app.add_subcommand(
      "plan", "MergeComp: profile a model's first steps, measure the codec and the network, "
              "and print the best partition of its tensors into buckets (libtorch)");
  add_train_options(*sub, command);
  sub->add_option("--link-rate", command.link_rate,
                  "plan for links of this rate (e.g. 1gbit, 10gbit) instead of the measured one");
  return sub;
}

int run_plan_command(TrainCommand& command, int argc, char** argv) {
  command.planning = true;
  return run_train_command(command, argc, argv);
}

}  // namespace qccl::tools
