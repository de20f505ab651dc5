#include "qccl/tools/scaling_fit.h"

#include <algorithm>
#include <regex>
#include <tuple>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/tools/suite_fit.h"

namespace qccl::tools {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size();
  return m % 2 ? values[m / 2] : 0.5 * (values[m / 2 - 1] + values[m / 2]);
}

namespace {

// The hosts and ranks per host in a bench-scaling file name
// (allreduce-h4x2-fp32-r1.json); false for other files.
bool shape_of_file(const std::string& file, HostShape& shape) {
  static const std::regex pattern(R"(allreduce-h(\d+)x(\d+)-.*-r\d+\.json)");
  std::smatch match;
  if (!std::regex_match(file, match, pattern)) return false;
  shape = {std::stoi(match[1]), std::stoi(match[2])};
  return true;
}

// Each configuration's rounds, in a stable order.
std::vector<ScalingPoint> collect_points(const SuiteData& data) {
  using Key = std::tuple<int, int, std::string, std::string, double>;
  std::map<Key, ScalingPoint> points;
  for (const auto& row : data.rows) {
    HostShape shape;
    if (row.algorithm == "native" || !shape_of_file(row.file, shape)) continue;
    if (shape.ranks() != row.hosts) {
      throw InvalidArgument("'" + row.file + "' ran on " + std::to_string(row.hosts) +
                            " ranks, not the " + std::to_string(shape.ranks()) +
                            " its name says");
    }
    auto& p = points[{shape.hosts, shape.ranks_per_host, row.codec, row.algorithm, row.bytes}];
    p.shape = shape;
    p.codec = row.codec;
    p.algorithm = parse_algorithm(row.algorithm);
    p.bytes = row.bytes;
    p.link_rate_bps = shape.hosts > 1 ? row.link_rate_bps : 0;
    p.seconds.push_back(row.median_us * 1e-6);
  }
  std::vector<ScalingPoint> list;
  for (auto& [key, p] : points) {
    p.measured = median_of(p.seconds);
    list.push_back(p);
  }
  return list;
}

// The model's terms for a point, the shaped link's burst taken out of the
// card's bytes as in the suite's fits.
HostLinkTerms point_terms(const ScalingPoint& p, const CodecCost& cost) {
  HostLinkTerms terms = host_link_terms(p.algorithm, p.shape, p.bytes, cost.ratio);
  terms.card_bytes = shaped_wire_bytes(terms.card_bytes, p.link_rate_bps);
  return terms;
}

}  // namespace

ScalingFit fit_scaling(const SuiteData& data, int fit_hosts) {
  ScalingFit fit;
  for (const auto& c : data.codecs) fit.codecs[CodecSpec::parse(c.codec).text()] = codec_cost_of(c);
  if (!fit.codecs.count("fp32")) {
    throw InvalidArgument("the scaling fit needs codec.json with an fp32 row "
                          "(scripts/bench-scaling --codec-bench)");
  }
  fit.points = collect_points(data);
  std::vector<HostLinkSample> one_host, one_rank_hosts;
  for (auto& p : fit.points) {
    if (!fit.codecs.count(p.codec)) {
      throw InvalidArgument("codec.json has no row for '" + p.codec +
                            "'; run scripts/bench-scaling --codec-bench with it");
    }
    if (p.codec != "fp32") continue;
    const CodecCost& cost = fit.codecs.at("fp32");
    if (p.shape.hosts == 1 && p.algorithm == Algorithm::hierarchical) {
      p.fitted = true;
      one_host.push_back({point_terms(p, cost), cost, p.measured});
    } else if (p.shape.hosts == fit_hosts && p.shape.ranks_per_host == 1 &&
               p.algorithm == Algorithm::ring) {
      p.fitted = true;
      fit.link_rate_bps = p.link_rate_bps;
      one_rank_hosts.push_back({point_terms(p, cost), cost, p.measured});
    }
  }
  if (one_host.empty() || one_rank_hosts.empty()) {
    throw InvalidArgument("the scaling fit needs the fp32 hierarchical allreduce on one host "
                          "(allreduce-h1xL-fp32-rK.json) and the fp32 ring on " +
                          std::to_string(fit_hosts) + " hosts of one rank "
                          "(allreduce-h" + std::to_string(fit_hosts) + "x1-fp32-rK.json)");
  }
  fit.links = fit_host_links(one_host, one_rank_hosts);
  std::vector<double> errors, fitted_errors;
  for (auto& p : fit.points) {
    const CodecCost& cost = fit.codecs.at(p.codec);
    p.predicted = predict_host_link_seconds(point_terms(p, cost), fit.links, cost);
    (p.fitted ? fitted_errors : errors).push_back(std::abs(p.predicted - p.measured) / p.measured);
  }
  fit.median_error = median_of(errors);
  fit.median_error_fitted = median_of(fitted_errors);
  return fit;
}

}  // namespace qccl::tools
