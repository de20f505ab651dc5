#include "qccl/tools/suite_fit.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "qccl/common/errors.h"

namespace qccl::tools {

double shaped_wire_bytes(double sent_bytes, double link_rate_bps) {
  if (link_rate_bps <= 0) return sent_bytes;
  return std::max(0.0, sent_bytes - link_rate_bps / 8 * kTbfBucketSeconds);
}

CodecCost codec_cost_of(const CodecThroughput& t) {
  CodecCost cost{t.wire_ratio, t.reduce_gbps * 1e9, 0};
  if (t.codec != "fp32") cost.delta = 1 / (t.encode_gbps * 1e9) + 1 / (t.decode_gbps * 1e9);
  return cost;
}

std::vector<GroupFit> fit_suite(const SuiteData& data) {
  // γ and δ per codec from the microbenchmarks (GB/s of fp32 input).
  std::map<std::string, const CodecThroughput*> throughput;
  for (const auto& c : data.codecs) throughput[c.codec] = &c;
  using Key = std::tuple<int, double, std::string, std::string>;  // hosts, rate, run, series
  std::map<Key, std::vector<const SuiteRow*>> groups;
  for (const auto& row : data.rows) {
    // One MPI fp32 baseline per cluster (every codec run measures it again).
    if (row.algorithm == "native" && row.run != "fp32" && !row.mpi_codec) continue;
    groups[{row.hosts, row.link_rate_bps, row.run, series_name(row)}].push_back(&row);
  }
  std::vector<GroupFit> fits;
  for (const auto& [key, rows] : groups) {
    const auto& first = *rows.front();
    GroupFit fit;
    fit.hosts = first.hosts;
    fit.link_rate_bps = first.link_rate_bps;
    fit.series = std::get<3>(key);
    fit.codec = first.codec;
    fit.algorithm = first.algorithm;
    const Algorithm algorithm = parse_algorithm(first.algorithm);
    double gamma = 0, delta = 0;
    if (first.algorithm != "native") {
      const auto it = throughput.find(first.codec);
      if (it != throughput.end()) {
        const CodecCost cost = codec_cost_of(*it->second);
        gamma = cost.gamma;
        delta = cost.delta;
      }
    }
    std::vector<ModelSample> samples;
    // MPI's bytes: a bandwidth-optimal algorithm's, on the encoding when MPI
    // ran the codec.
    double mpi_ratio = 1;
    if (first.mpi_codec) {
      const auto it = throughput.find(first.codec);
      if (it != throughput.end()) mpi_ratio = it->second->wire_ratio;
    }
    for (const SuiteRow* r : rows) {
      const double sent =
          r->sent_bytes_per_rank.value_or(2.0 * (r->hosts - 1) / r->hosts * r->bytes / mpi_ratio);
      samples.push_back({model_terms_measured(algorithm, r->hosts, r->bytes,
                                              shaped_wire_bytes(sent, r->link_rate_bps)),
                         r->median_us * 1e-6});
    }
    fit.samples = samples.size();
    try {
      fit.params = fit_alpha_beta(samples, gamma, delta);
      fit.error = fit_error(samples, fit.params);
    } catch (const InvalidArgument& e) {
      fit.failure = e.what();
    }
    fits.push_back(fit);
  }
  return fits;
}

}  // namespace qccl::tools
