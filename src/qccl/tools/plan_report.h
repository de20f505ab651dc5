// What `qccl plan` prints: MergeComp's plans for each run, beside the
// predictions for the other bucket layouts.
#pragma once

#include <iosfwd>
#include <vector>

#include "qccl/training/train_config.h"

namespace qccl::tools {

// One table per run (codec): the profile, the fitted costs and each plan's
// predicted ms/step.
void print_plans(std::ostream& out, const std::vector<engines::TrainSummary>& runs);

}  // namespace qccl::tools
