// Fitting the performance model (scheduling/perf_model.h) to a benchmark
// suite folder: one fit per (hosts, link rate, run, series) group, with the
// emulated cluster's token-bucket burst taken out of the wire bytes.
#pragma once

#include <string>
#include <vector>

#include "qccl/scheduling/host_link_model.h"
#include "qccl/scheduling/perf_model.h"
#include "qccl/tools/suite_data.h"

namespace qccl::tools {

// scripts/cluster's tbf bucket holds 4 ms of the link rate: that many bytes
// of a transfer pass unshaped, so a shaped link's wire term counts the bytes
// beyond them.
inline constexpr double kTbfBucketSeconds = 0.004;
double shaped_wire_bytes(double sent_bytes, double link_rate_bps);

// A codec's model costs from its microbenchmark: ρ, γ and, but for the
// plain fp32 sum, δ = 1/encode + 1/decode.
CodecCost codec_cost_of(const CodecThroughput& throughput);

// A fitted suite: per (hosts, link rate, run, series) group.
struct GroupFit {
  int hosts = 0;
  double link_rate_bps = 0;
  std::string series, codec, algorithm;
  ModelParams params;
  FitError error;
  std::size_t samples = 0;
  std::string failure;  // why this group could not be fitted (then params are unset)
};
std::vector<GroupFit> fit_suite(const SuiteData& data);

}  // namespace qccl::tools
