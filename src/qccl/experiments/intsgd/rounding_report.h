// The table `qccl experiment intsgd-rounding` prints: per model, its
// settings, then a row per variant with the final test metric's mean ± sd
// over the seeds, its range, the difference to SGD of the same seed, the
// final test and training loss, and the runs that diverged.
#pragma once

#include <ostream>
#include <string>

#include "qccl/experiments/intsgd/rounding_results.h"

namespace qccl::tools {

void print_rounding_report(std::ostream& out, const RoundingReport& report);

// "85.66 ± 0.21": a spread's mean and sd times `scale` with `digits`
// decimals (the mean signed when `sign`); "-" when no seed finished.
std::string mean_sd_text(const Spread& s, double scale, int digits, bool sign = false);

// "85.21 .. 86.02": its smallest and largest value; "-" when none.
std::string range_text(const Spread& s, double scale, int digits);

}  // namespace qccl::tools
