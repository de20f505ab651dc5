#include "qccl/tools/model_report.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "qccl/common/errors.h"
#include "qccl/tools/suite_fit.h"
#include "qccl/tools/suite_data.h"
#include "qccl/common/files.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

std::string format(const char* pattern, double value) {
  char text[48];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size();
  return m % 2 ? values[m / 2] : 0.5 * (values[m / 2 - 1] + values[m / 2]);
}

// What the fits of the fp32 ring on shaped links say about the links, and
// every fit's median error.
struct FitSummary {
  std::vector<double> errors, efficiencies, latencies;
};

// One line per fit (or why it failed), into `out` and json["fits"].
FitSummary print_fits(std::ostream& out, const std::vector<GroupFit>& fits, nlohmann::json& json) {
  char line[256];
  std::snprintf(line, sizeof line, "# %5s %12s  %-44s %10s %11s %9s %8s %9s %9s\n", "hosts",
                "link", "series", "alpha(us)", "beta(MB/s)", "beta/link", "samples", "med err",
                "max err");
  out << line;
  FitSummary summary;
  auto& [errors, efficiencies, latencies] = summary;
  for (const auto& f : fits) {
    if (!f.failure.empty()) {
      out << "  " << f.hosts << " hosts, " << rate_name(f.link_rate_bps) << ", " << f.series
          << ": not fitted: " << f.failure << "\n";
      continue;
    }
    const double link_bytes = f.link_rate_bps / 8;
    std::snprintf(line, sizeof line, "  %5d %12s  %-44s %10.1f %11.1f %9s %8zu %8.1f%% %8.1f%%\n",
                  f.hosts, rate_name(f.link_rate_bps).c_str(), f.series.c_str(),
                  f.params.alpha * 1e6, f.params.beta / 1e6,
                  link_bytes > 0 ? format("%.2f", f.params.beta / link_bytes).c_str() : "-",
                  f.samples, 100 * f.error.median, 100 * f.error.max);
    out << line;
    errors.push_back(f.error.median);
    if (link_bytes > 0 && f.codec == "fp32" && f.algorithm == "ring") {
      efficiencies.push_back(f.params.beta / link_bytes);
      latencies.push_back(f.params.alpha);
    }
    json["fits"].push_back({{"hosts", f.hosts}, {"link_rate_bps", f.link_rate_bps},
                            {"series", f.series}, {"codec", f.codec}, {"algorithm", f.algorithm},
                            {"alpha_s", f.params.alpha}, {"beta_bytes_per_s", f.params.beta},
                            {"gamma_bytes_per_s", f.params.gamma}, {"delta_s_per_byte", f.params.delta},
                            {"samples", f.samples}, {"median_relative_error", f.error.median},
                            {"max_relative_error", f.error.max}});
  }
  return summary;
}

// The model's times on config.ranks ranks at config.link_rate_bps for every
// codec of the suite (and config.ratio), next to the fp32 ring.
void print_predictions(std::ostream& out, const ModelCommandConfig& config, const SuiteData& data,
                       const FitSummary& fits, nlohmann::json& json) {
  const auto& efficiencies = fits.efficiencies;
  const auto& latencies = fits.latencies;
  char line[256];
  if (efficiencies.empty()) {
    throw InvalidArgument("predicting needs fp32 ring runs on shaped links in '" +
                          config.results + "' (the link efficiency and latency come from them)");
  }
  // The link as the fp32 ring saw it on the shaped clusters.
  ModelParams link{median(latencies), config.link_rate_bps / 8 * median(efficiencies), 0, 0};
  const double s = static_cast<double>(config.bytes);
  out << "#\n# prediction: " << format_bytes(config.bytes) << " on " << config.ranks
      << " ranks, link " << format_rate(config.link_rate_bps) << " (beta "
      << format("%.1f", link.beta / 1e6) << " MB/s = " << format("%.0f%%", 100 * median(efficiencies))
      << " of the rate, alpha " << format("%.1f", link.alpha * 1e6) << " us, from the fp32 ring fits)\n";
  out << "# speed-up: the model's fp32 ring time over the codec's ring time (encode and decode "
         "included); Eq. (10) leaves them out (delta = 0, as the paper)\n";
  std::snprintf(line, sizeof line, "# %-56s %11s %11s %9s %7s %16s %s\n", "codec", "ring(ms)",
                "hd(ms)", "speed-up", "omega", "Eq.(10): beta <", "holds");
  out << line;
  double gamma_fp32 = 0;
  for (const auto& c : data.codecs) {
    if (c.codec == "fp32") gamma_fp32 = c.reduce_gbps * 1e9;
  }
  const auto predict = [&](const std::string& name, double ratio, double gamma, double delta) {
    ModelParams p = link;
    p.gamma = gamma;
    p.delta = delta;
    const double ring = predict_seconds(model_terms(Algorithm::ring, config.ranks, s, ratio), p);
    const double halving = predict_seconds(model_terms(Algorithm::halving_doubling, config.ranks, s, ratio), p);
    ModelParams plain = link;
    plain.gamma = gamma_fp32;
    const double fp32 = predict_seconds(model_terms(Algorithm::ring, config.ranks, s, 1), plain);
    const auto condition = speedup_condition(ratio, gamma_fp32, gamma, link.beta);
    const std::string bound =
        condition.max_beta ? format("%.3g GB/s", *condition.max_beta / 1e9) : "any";
    std::snprintf(line, sizeof line, "  %-56s %11.2f %11.2f %8.2fx %7.2f %16s %s\n", name.c_str(),
                  ring * 1e3, halving * 1e3, fp32 / ring, condition.omega, bound.c_str(),
                  condition.holds ? "yes" : "no");
    out << line;
    json["predictions"].push_back({{"codec", name}, {"ratio", ratio}, {"ring_s", ring},
                                   {"halving_doubling_s", halving}, {"speedup_vs_fp32_ring", fp32 / ring},
                                   {"omega", condition.omega},
                                   {"eq10_max_beta", condition.max_beta ? nlohmann::json(*condition.max_beta) : nullptr},
                                   {"eq10_holds", condition.holds}});
  };
  if (gamma_fp32 <= 0) {
    throw InvalidArgument("predicting needs codec.json with an fp32 row (qccl bench codec)");
  }
  for (const auto& c : data.codecs) {
    if (c.reduce_gbps <= 0) {  // no hop reduce: every rank gathers and decodes every encoding
      out << "  " << c.codec << ": allgather-based, outside this (reduce in transit) model\n";
      continue;
    }
    const double delta = c.codec == "fp32" ? 0 : 1 / (c.encode_gbps * 1e9) + 1 / (c.decode_gbps * 1e9);
    predict(c.codec, c.wire_ratio, c.reduce_gbps * 1e9, delta);
  }
  if (config.ratio > 0) {
    predict("(ratio " + format("%g", config.ratio) + ", fp32's gamma, no codec cost)",
            config.ratio, gamma_fp32, 0);
  }
}

}  // namespace

void run_model_command(const ModelCommandConfig& config, std::ostream& out) {
  const SuiteData data = load_suite(config.results);
  const auto fits = fit_suite(data);
  nlohmann::json json{{"results", config.results}};

  out << "# qccl model: t = steps·alpha + wire/beta + reduce/gamma + codec·delta (Global-QSGD §7), "
         "fitted per cluster and series\n"
      << "# gamma and delta from codec.json; alpha and beta fitted on relative error; error = "
         "|model - measured| / measured over the sizes\n";
  const FitSummary summary = print_fits(out, fits, json);
  const auto& errors = summary.errors;
  if (errors.empty()) throw InvalidArgument("no series of '" + config.results + "' could be fitted");
  out << "# model error over " << errors.size() << " fits: median of medians "
      << format("%.1f%%", 100 * median(errors)) << ", worst median "
      << format("%.1f%%", 100 * *std::max_element(errors.begin(), errors.end())) << "\n";
  json["median_relative_error"] = median(errors);

  if (config.link_rate_bps > 0) print_predictions(out, config, data, summary, json);
  if (!config.output.empty()) write_file_atomically(config.output, json.dump(2) + "\n");
}

}  // namespace qccl::tools
