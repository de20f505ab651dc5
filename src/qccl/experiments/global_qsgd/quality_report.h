// The table `qccl experiment global-qsgd-quality` prints: the GPT's
// settings, then a row per variant with the final test perplexity's mean ±
// sd over the seeds and its range, the change against fp32 (of the means,
// and seed by seed), the final test and training loss, and beside them the
// paper's Table 4 perplexity for the same row and its change against the
// paper's no-quantization row.
#pragma once

#include <ostream>

#include "qccl/experiments/intsgd/rounding_results.h"

namespace qccl::tools {

void print_quality_report(std::ostream& out, const RoundingReport& report);

}  // namespace qccl::tools
