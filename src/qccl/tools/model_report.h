// `qccl model`: fits the §7 performance model to a benchmark-suite folder,
// reports its error against the measurements, and predicts allreduce times
// and speed-ups (with Eq. (10)'s condition) for a given link.
#pragma once

#include <ostream>
#include <string>

namespace qccl::tools {

struct ModelCommandConfig {
  std::string results;      // the suite folder
  std::string output;       // optional model.json
  double link_rate_bps = 0; // predict for this link (0: no prediction)
  std::size_t bytes = std::size_t{64} << 20;
  int ranks = 4;
  double ratio = 0;         // also predict a codec of this ratio at fp32's γ (0: none)
};

// Prints the fits and predictions; throws InvalidArgument for bad input.
void run_model_command(const ModelCommandConfig& config, std::ostream& out);

}  // namespace qccl::tools
