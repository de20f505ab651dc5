#include "qccl/tools/scaling_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"
#include "qccl/tools/host_links_file.h"
#include "qccl/tools/scaling_fit.h"
#include "qccl/tools/suite_data.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

constexpr Algorithm kAlgorithms[] = {Algorithm::ring, Algorithm::halving_doubling,
                                     Algorithm::hierarchical};

void print_coefficients(std::ostream& out, const ScalingFit& fit) {
  char line[256];
  std::snprintf(line, sizeof line,
                "# network (fp32 ring, one-rank hosts, %s): alpha %.1f us per step, beta %.2f "
                "MB/s per card (%.0f%% of the rate)\n"
                "# within a host (fp32 hierarchical, one host): alpha %.1f us per step, beta "
                "%.0f MB/s\n",
                rate_name(fit.link_rate_bps).c_str(), fit.links.network_alpha * 1e6,
                fit.links.network_beta / 1e6, 100 * fit.links.network_beta / (fit.link_rate_bps / 8),
                fit.links.local_alpha * 1e6, fit.links.local_beta / 1e6);
  out << line;
  for (const auto& [codec, cost] : fit.codecs) {
    std::snprintf(line, sizeof line, "# codec %-24s ratio %5.2f  gamma %6.2f GB/s  delta %.3g ns/B\n",
                  codec.c_str(), cost.ratio, cost.gamma / 1e9, cost.delta * 1e9);
    out << line;
  }
}

// The median |error| of the predicted points of each size: below a shaped
// link's burst a transfer is latency-bound, above it link-bound, and the
// two fare differently.
void print_errors_by_size(std::ostream& out, const ScalingFit& fit, nlohmann::json& json) {
  std::map<double, std::vector<double>> by_size;
  for (const auto& p : fit.points) {
    if (!p.fitted) by_size[p.bytes].push_back(std::abs(p.predicted - p.measured) / p.measured);
  }
  out << "# median |error| by size:";
  for (auto& [bytes, errors] : by_size) {
    const double median = median_of(errors);
    char text[64];
    std::snprintf(text, sizeof text, " %s %.1f%% (%zu)",
                  format_bytes(static_cast<std::size_t>(bytes)).c_str(), 100 * median,
                  errors.size());
    out << text;
    json["median_relative_error_by_bytes"][std::to_string(static_cast<long long>(bytes))] = median;
  }
  out << "\n";
}

// One line per measured point, and the medians of the errors.
void print_validation(std::ostream& out, const ScalingFit& fit, nlohmann::json& json) {
  char line[256];
  std::snprintf(line, sizeof line, "# %-7s %-20s %-17s %9s %6s %12s %12s %8s\n", "hosts", "codec",
                "algorithm", "bytes", "rounds", "measured ms", "model ms", "error");
  out << line;
  for (const auto& p : fit.points) {
    const std::string shape =
        std::to_string(p.shape.hosts) + "x" + std::to_string(p.shape.ranks_per_host);
    const double error = (p.predicted - p.measured) / p.measured;
    std::snprintf(line, sizeof line, "  %-7s %-20s %-17s %9s %6zu %12.2f %12.2f %+7.1f%%%s\n",
                  shape.c_str(), p.codec.c_str(), std::string(to_string(p.algorithm)).c_str(),
                  format_bytes(static_cast<std::size_t>(p.bytes)).c_str(), p.seconds.size(),
                  p.measured * 1e3, p.predicted * 1e3, 100 * error, p.fitted ? "  (fitted)" : "");
    out << line;
    json["points"].push_back({{"hosts", p.shape.hosts}, {"ranks_per_host", p.shape.ranks_per_host},
                              {"codec", p.codec}, {"algorithm", to_string(p.algorithm)},
                              {"bytes", p.bytes}, {"rounds_s", p.seconds},
                              {"measured_s", p.measured}, {"predicted_s", p.predicted},
                              {"fitted", p.fitted}});
  }
  std::snprintf(line, sizeof line,
                "# median |error|: %.1f%% over the %zu points predicted, %.1f%% over the points "
                "fitted\n",
                100 * fit.median_error,
                static_cast<std::size_t>(std::count_if(fit.points.begin(), fit.points.end(),
                                                       [](const auto& p) { return !p.fitted; })),
                100 * fit.median_error_fitted);
  out << line;
  print_errors_by_size(out, fit, json);
  json["median_relative_error"] = fit.median_error;
  json["median_relative_error_fitted"] = fit.median_error_fitted;
}

// The job's shape for `ranks`: hosts of min(L, ranks/2) ranks.
HostShape shape_for(int ranks, int ranks_per_host) {
  const int l = std::max(1, std::min(ranks_per_host, ranks / 2));
  if (ranks % l != 0) {
    throw InvalidArgument("--scaling-ranks " + std::to_string(ranks) + " is not a multiple of " +
                          std::to_string(l) + " ranks per host");
  }
  return {ranks / l, l};
}

struct Prediction {
  std::string workload, codec;
  Algorithm algorithm = Algorithm::ring;
  double rate = 0;
  HostShape shape;
  double step_s = 0;
};

// Every workload × link × ranks × codec × algorithm: predicted ms per step.
std::vector<Prediction> predict(const ScalingConfig& config, const ScalingFit& fit,
                                const std::string& codec) {
  std::vector<Prediction> list;
  for (const auto& w : config.workloads) {
    for (double rate : config.link_rates_bps) {
      HostLinkParams links = fit.links;
      links.network_beta = fit.links.network_beta / (fit.link_rate_bps / 8) * rate / 8;
      for (int ranks : config.ranks) {
        const HostShape shape = shape_for(ranks, config.ranks_per_host);
        for (const std::string& c : {std::string("fp32"), codec}) {
          const CodecCost& cost = fit.codecs.at(c);
          for (Algorithm a : kAlgorithms) {
            const auto terms = host_link_terms(a, shape, 4 * w.parameters, cost.ratio);
            const double seconds = w.compute_ms * 1e-3 + predict_host_link_seconds(terms, links, cost);
            list.push_back({w.name, c, a, rate, shape, seconds});
          }
        }
      }
    }
  }
  return list;
}

void print_predictions(std::ostream& out, const std::vector<Prediction>& list, const std::string& codec,
                       nlohmann::json& json) {
  out << "#\n# predicted ms per step (compute + one allreduce of the gradient, not overlapped); "
         "codec = "
      << codec << "; best = the fastest algorithm's fp32 time over the codec's\n";
  char line[320];
  std::snprintf(line, sizeof line, "# %-12s %10s %9s %10s %10s %10s %10s %10s %10s %7s\n",
                "workload", "link", "hosts", "ring fp32", "hd fp32", "hier fp32", "ring codec",
                "hd codec", "hier codec", "best");
  out << line;
  for (std::size_t i = 0; i + 6 <= list.size(); i += 6) {
    const auto* p = &list[i];
    double best_fp32 = 1e300, best_codec = 1e300;
    for (int k = 0; k < 3; ++k) best_fp32 = std::min(best_fp32, p[k].step_s);
    for (int k = 3; k < 6; ++k) best_codec = std::min(best_codec, p[k].step_s);
    const std::string shape =
        std::to_string(p->shape.hosts) + "x" + std::to_string(p->shape.ranks_per_host);
    std::snprintf(line, sizeof line,
                  "  %-12s %10s %9s %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g %6.2fx\n",
                  p->workload.c_str(), format_rate(p->rate).c_str(), shape.c_str(),
                  p[0].step_s * 1e3, p[1].step_s * 1e3, p[2].step_s * 1e3, p[3].step_s * 1e3,
                  p[4].step_s * 1e3, p[5].step_s * 1e3, best_fp32 / best_codec);
    out << line;
  }
  for (const auto& p : list) {
    json["predictions"].push_back({{"workload", p.workload}, {"codec", p.codec},
                                   {"algorithm", to_string(p.algorithm)},
                                   {"link_rate_bps", p.rate}, {"hosts", p.shape.hosts},
                                   {"ranks_per_host", p.shape.ranks_per_host},
                                   {"step_s", p.step_s}});
  }
}

void write_plot(const std::string& path, const ScalingConfig& config,
                const std::vector<Prediction>& list) {
  std::vector<PlotPanel> panels;
  for (const auto& w : config.workloads) {
    for (double rate : config.link_rates_bps) {
      PlotPanel panel{w.name + ", " + format_rate(rate) + " links", "ranks (hosts of up to " +
                      std::to_string(config.ranks_per_host) + ")", "predicted ms per step", true,
                      true, {}};
      for (const auto& p : list) {
        if (p.workload != w.name || p.rate != rate) continue;
        const std::string name =
            std::string(to_string(p.algorithm)) + " " + (p.codec == "fp32" ? "fp32" : config.codec);
        auto it = std::find_if(panel.series.begin(), panel.series.end(),
                               [&](const PlotSeries& s) { return s.name == name; });
        if (it == panel.series.end()) it = panel.series.insert(panel.series.end(), {name, {}});
        it->points.emplace_back(p.shape.ranks(), p.step_s * 1e3);
      }
      panels.push_back(panel);
    }
  }
  write_file_atomically(path, render_svg(panels));
}

}  // namespace

ScalingWorkload parse_workload(const std::string& text) {
  const auto equals = text.find('=');
  const auto colon = text.find(':', equals == std::string::npos ? 0 : equals);
  ScalingWorkload w;
  try {
    if (equals == std::string::npos || equals == 0) throw std::invalid_argument("no name");
    w.name = text.substr(0, equals);
    w.parameters = std::stod(text.substr(equals + 1, colon - equals - 1));
    if (colon != std::string::npos) w.compute_ms = std::stod(text.substr(colon + 1));
  } catch (const std::exception&) {
    throw InvalidArgument("--workload '" + text + "': expected NAME=PARAMETERS or "
                          "NAME=PARAMETERS:COMPUTE_MS, e.g. cnn=80202:3.5");
  }
  if (!(w.parameters > 0) || w.compute_ms < 0) {
    throw InvalidArgument("--workload '" + text + "': parameters must be positive and the "
                          "compute time not negative");
  }
  return w;
}

std::vector<ScalingWorkload> default_workloads() {
  // Parameter counts as `qccl train --model M` prints them at its defaults.
  return {{"recommender", 12824833, 0}, {"cnn", 80202, 0}, {"gpt", 3205120, 0}};
}

void run_scaling_command(const ScalingConfig& config, std::ostream& out) {
  const ScalingFit fit = fit_scaling(load_suite(config.results), config.fit_hosts);
  nlohmann::json json{{"results", config.results}, {"host_links", host_links_json(fit.links)},
                      {"fitted_link_rate_bps", fit.link_rate_bps}};
  for (const auto& [codec, cost] : fit.codecs) {
    json["codecs"].push_back(
        {{"codec", codec}, {"ratio", cost.ratio}, {"gamma", cost.gamma}, {"delta", cost.delta}});
  }
  out << "# qccl model --scaling: t = s_net*alpha + card/beta + s_loc*alpha_l + local/beta_l + "
         "reduce/gamma + codec*delta (Global-QSGD §7 with hosts of L ranks sharing one card)\n";
  print_coefficients(out, fit);
  print_validation(out, fit, json);
  if (!config.link_rates_bps.empty()) {
    const std::string codec = CodecSpec::parse(config.codec).text();
    if (!fit.codecs.count(codec)) {
      throw InvalidArgument("--codec '" + config.codec + "' has no row in codec.json of '" +
                            config.results + "'");
    }
    const auto list = predict(config, fit, codec);
    print_predictions(out, list, codec, json);
    if (!config.plot.empty()) write_plot(config.plot, config, list);
  }
  if (!config.output.empty()) write_file_atomically(config.output, json.dump(2) + "\n");
}

}  // namespace qccl::tools
