// The table `qccl experiment qsdp` prints (qsdp_experiment.h).
#pragma once

#include <ostream>

#include "qccl/experiments/qsdp/qsdp_experiment.h"

namespace qccl::tools {

// The settings and the machine on one line, an aligned table of the
// variants, their codecs, what the columns mean and the files written.
void print_qsdp_report(std::ostream& out, const QsdpReport& report);

}  // namespace qccl::tools
