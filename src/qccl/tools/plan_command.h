// `qccl plan`: MergeComp's partition for a model and codec on this run's
// ranks and network (MergeComp §4.3, Algorithm 2). It trains the model's
// first steps with the whole model in one bucket to profile them, measures
// the codec and the collective, searches, and prints the chosen groups with
// their predicted step time next to the predictions for layer-wise
// compression, one group and DDP's 25 MiB rule. `--link-rate` plans for a
// network other than the one measured; `qccl train --buckets groups:..`
// trains with a printed plan, `--buckets mergecomp` plans while training.
#pragma once

#include <CLI/CLI.hpp>

#include "qccl/tools/train_command.h"

namespace qccl::tools {

CLI::App* add_plan(CLI::App& app, TrainCommand& command);
// qccl train's run in planning mode: profile, search, print the plans.
int run_plan_command(TrainCommand& command, int argc, char** argv);

}  // namespace qccl::tools
