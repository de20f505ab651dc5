// The table `qccl experiment intsgd-rounding` prints: per model, its
// settings, then a row per variant with the final test metric's mean ± sd
// over the seeds, its range, the difference to SGD of the same seed, the
// final test and training loss, and the runs that diverged.
#pragma once

#include <ostream>

#include "qccl/experiments/intsgd/rounding_results.h"

namespace qccl::tools {

void print_rounding_report(std::ostream& out, const RoundingReport& report);

}  // namespace qccl::tools
