// Fitting the host-link model (scheduling/host_link_model.h) to a
// scripts/bench-scaling folder and checking it against every measured
// point: the terms within a host from the one-host run, the network's from
// the fp32 ring on one cluster of one-rank hosts, the codecs' from
// codec.json; every other point is a prediction.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "qccl/scheduling/host_link_model.h"
#include "qccl/tools/suite_data.h"

namespace qccl::tools {

// One measured configuration: the median over rounds of each run's median.
struct ScalingPoint {
  HostShape shape;
  std::string codec;  // canonical spec, "fp32" for the plain sum
  Algorithm algorithm = Algorithm::ring;
  double bytes = 0;
  double link_rate_bps = 0;  // 0: one host, no network
  std::vector<double> seconds;  // each round's median
  double measured = 0;          // their median
  double predicted = 0;
  bool fitted = false;  // used to fit the coefficients
};

struct ScalingFit {
  HostLinkParams links;
  double link_rate_bps = 0;  // the network's fitted from this rate
  std::map<std::string, CodecCost> codecs;
  std::vector<ScalingPoint> points;
  double median_error = 0;        // over the points not fitted
  double median_error_fitted = 0; // over the fitted ones
};

// The median of `values` (0 for none).
double median_of(std::vector<double> values);

// Reads the folder's allreduce-hHxL-CODEC-rK.json files (load_suite) and
// codec.json, fits with the cluster of `fit_hosts` one-rank hosts, and
// predicts every point. Throws InvalidArgument naming what is missing.
ScalingFit fit_scaling(const SuiteData& data, int fit_hosts);

}  // namespace qccl::tools
