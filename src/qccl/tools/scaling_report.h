// `qccl model --scaling DIR`: the host-link model fitted to a
// scripts/bench-scaling folder (scaling_fit.h), its error at every measured
// point, and its predictions of training steps from a few ranks to
// thousands for the flat ring, halving-doubling and the hierarchical
// algorithm, each with fp32 and a codec, as a table, an SVG plot and JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace qccl::tools {

// A training job to predict: its gradient and the rest of its step.
struct ScalingWorkload {
  std::string name;
  double parameters = 0;  // fp32 gradient elements exchanged per step
  double compute_ms = 0;  // the step's time without the exchange
};

struct ScalingConfig {
  std::string results;  // the bench-scaling folder
  int fit_hosts = 4;    // the one-rank hosts whose fp32 ring fits the network
  std::string output;   // model.json (coefficients, points, predictions); "" none
  std::string plot;     // the predictions' SVG; "" none
  std::vector<ScalingWorkload> workloads;
  std::vector<int> ranks{4, 16, 64, 256, 1024};
  int ranks_per_host = 8;               // at most; a job of n ranks has min(this, n/2)
  std::vector<double> link_rates_bps;  // predict for these links; none: no predictions
  std::string codec = "global-qsgd";   // beside fp32
};

// "recommender=12824833:20.5" (compute ms optional); InvalidArgument for
// anything else.
ScalingWorkload parse_workload(const std::string& text);
// The recommender, the CNN and the GPT of `qccl train` at their defaults.
std::vector<ScalingWorkload> default_workloads();

void run_scaling_command(const ScalingConfig& config, std::ostream& out);

}  // namespace qccl::tools
