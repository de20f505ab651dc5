#include "qccl/experiments/qsdp/qsdp_output.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::tools {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* const kColumns =
    "variant,weights_codec,gradients_codec,steps,seeds,perplexity,perplexity_sd,"
    "relative_perplexity_percent,relative_sd,computed_perplexity,computed_perplexity_sd,"
    "computed_relative_percent,computed_relative_sd,step_ms,data_ms,compute_ms,waiting_ms,optimizer_ms,mean_step_ms,sent_bytes_per_step,"
    "payload_bytes_per_step,speedup_vs_fp32,speedup_vs_baseline,peak_rss_mib,wall_s,"
    "weights_range_bulk_sd_median,weights_range_bulk_sd_widest";

// Bytes rank 0 sent per step; NaN where the transport could not count them.
double sent_bytes(const QsdpRow& row) {
  return row.summary.sent_bytes_per_step.value_or(std::nan(""));
}

// The mean step over every step run (warm-up included), from the steps per second.
double mean_step_ms(const QsdpRow& row) {
  return row.summary.steps_per_second > 0 ? 1e3 / row.summary.steps_per_second : std::nan("");
}

double rss_mib(const QsdpRow& row) {
  return static_cast<double>(row.summary.peak_rss_bytes) / kMiB;
}

// A CSV field: empty for NaN (no reference variant ran).
std::string field(double value) {
  if (!std::isfinite(value)) return "";
  std::ostringstream text;
  text << std::setprecision(10) << value;
  return text.str();
}

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
}

nlohmann::json numbers(const std::vector<double>& values) {
  auto out = nlohmann::json::array();
  for (double v : values) out.push_back(number_or_null(v));
  return out;
}

std::string csv_text(const QsdpReport& report) {
  std::ostringstream csv;
  csv << kColumns << "\n";
  for (const auto& r : report.rows) {
    const auto& s = r.summary.split;
    const WeightSpread spread = block_weight_spread(r.summary);
    csv << r.variant.name << ",\"" << r.variant.weights_codec << "\",\""
        << r.variant.gradients_codec << "\"," << r.summary.steps << "," << r.perplexities.size()
        << "," << field(mean_of(r.perplexities)) << "," << field(spread_of(r.perplexities)) << ","
        << field(r.relative_perplexity_percent) << "," << field(spread_of(r.relative_percents)) << ","
        << field(mean_of(r.computed_perplexities)) << "," << field(spread_of(r.computed_perplexities))
        << "," << field(mean_of(r.computed_relative_percents)) << ","
        << field(spread_of(r.computed_relative_percents)) << "," << field(r.step_ms) << "," << field(s.data * 1e3) << "," << field(s.compute * 1e3) << ","
        << field(s.waiting * 1e3) << "," << field(s.optimizer * 1e3) << ","
        << field(mean_step_ms(r)) << "," << field(sent_bytes(r)) << ","
        << field(r.summary.payload_bytes_per_step) << "," << field(r.speedup_vs_fp32) << ","
        << field(r.speedup_vs_baseline) << "," << field(rss_mib(r)) << ","
        << field(r.summary.wall_seconds) << "," << field(spread.median) << ","
        << field(spread.widest) << "\n";
  }
  return csv.str();
}

nlohmann::json row_json(const QsdpRow& r) {
  const auto& s = r.summary.split;
  const WeightSpread spread = block_weight_spread(r.summary);
  return {{"variant", r.variant.name},
          {"weights_codec", r.variant.weights_codec},
          {"gradients_codec", r.variant.gradients_codec},
          {"engine", r.summary.engine},
          {"steps", r.summary.steps},
          {"perplexity", number_or_null(mean_of(r.perplexities))},
          {"perplexity_sd", number_or_null(spread_of(r.perplexities))},
          {"perplexities", numbers(r.perplexities)},
          {"test_loss", number_or_null(r.summary.final_test_loss)},
          {"relative_perplexity_percent", number_or_null(r.relative_perplexity_percent)},
          {"relative_percents", numbers(r.relative_percents)},
          {"computed_perplexity", number_or_null(mean_of(r.computed_perplexities))},
          {"computed_perplexities", numbers(r.computed_perplexities)},
          {"computed_relative_percents", numbers(r.computed_relative_percents)},
          {"step_ms", number_or_null(r.step_ms)},
          {"split_ms",
           {{"data", s.data * 1e3}, {"compute", s.compute * 1e3}, {"waiting", s.waiting * 1e3},
            {"optimizer", s.optimizer * 1e3}, {"encode", s.encode * 1e3},
            {"communicate", s.communicate * 1e3}, {"decode", s.decode * 1e3}}},
          {"mean_step_ms", number_or_null(mean_step_ms(r))},
          {"sent_bytes_per_step", number_or_null(sent_bytes(r))},
          {"payload_bytes_per_step", r.summary.payload_bytes_per_step},
          {"speedup_vs_fp32", number_or_null(r.speedup_vs_fp32)},
          {"speedup_vs_baseline", number_or_null(r.speedup_vs_baseline)},
          {"peak_rss_mib", rss_mib(r)},
          {"wall_seconds", r.summary.wall_seconds},
          {"weights_range_over_bulk_sd",
           {{"median", number_or_null(spread.median)}, {"widest", number_or_null(spread.widest)}}}};
}

std::string json_text(const QsdpReport& report) {
  const auto& c = report.train;
  const engines::TrainSummary none;
  const auto& first = report.rows.empty() ? none : report.rows.front().summary;
  nlohmann::json json = {{"experiment", "qsdp"},
                         {"model", c.model},
                         {"data", first.data},
                         {"ranks", report.ranks},
                         {"hidden", c.hidden},
                         {"layers", c.layers},
                         {"gpt_outlier_rows", c.gpt_outlier_rows},
                         {"gpt_outlier_scale", c.gpt_outlier_scale},
                         {"sequence_length", c.sequence_length},
                         {"parameters", first.parameters},
                         {"batch_per_rank", c.batch},
                         {"optimizer", c.optimizer},
                         {"lr", c.lr},
                         {"seed", c.seed},
                         {"seeds", report.seeds},
                         {"betas", {c.beta1, c.beta2}},
                         {"steps", report.steps},
                         {"refit", report.refit},
                         {"cpu", report.cpu},
                         {"variants", nlohmann::json::array()}};
  for (const auto& r : report.rows) json["variants"].push_back(row_json(r));
  return json.dump(2) + "\n";
}

// Three panels: the perplexity relative to the baseline's of the same seed,
// of the fp32 master weights and of the weights computed with (Q^w), one
// dot per seed; and ms/step. Each variant sits at its number in the
// legend ("3 W8G8"), so that the panels read the same way.
std::string svg_text(const QsdpReport& report) {
  const std::string scale = std::to_string(report.ranks) + " ranks, " +
                            std::to_string(report.steps) + " steps, " +
                            std::to_string(report.seeds.size()) + " seeds";
  const std::string x_label = "variant (its number in the legend)";
  PlotPanel master{"perplexity of the fp32 weights vs baseline, " + scale, x_label, "% vs baseline",
                   false, false, {}};
  PlotPanel computed{"perplexity of the quantized weights Q^w vs baseline", x_label, "% vs baseline",
                     false, false, {}};
  PlotPanel step{"time per step (first seed)", x_label, "ms per step", false, false, {}};
  const auto dots = [](double x, const std::vector<double>& values) {
    std::vector<std::pair<double, double>> points;
    for (double v : values) {
      if (std::isfinite(v)) points.emplace_back(x, v);
    }
    return points;
  };
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const auto& r = report.rows[i];
    const double x = static_cast<double>(i + 1);
    const std::string name = std::to_string(i + 1) + " " + r.variant.name;
    master.series.push_back({name, dots(x, r.relative_percents), true});
    computed.series.push_back({name, dots(x, r.computed_relative_percents), true});
    step.series.push_back({name, {{x, r.step_ms}}, true});
  }
  return render_svg({master, computed, step});
}

}  // namespace

std::vector<std::string> qsdp_output_files(const std::string& directory) {
  const std::filesystem::path dir(directory);
  return {(dir / "qsdp.csv").string(), (dir / "qsdp.json").string(), (dir / "qsdp.svg").string()};
}

std::vector<std::string> write_qsdp_outputs(const QsdpReport& report,
                                            const std::string& directory) {
  const auto files = qsdp_output_files(directory);
  write_file_atomically(files[0], csv_text(report));
  write_file_atomically(files[1], json_text(report));
  write_file_atomically(files[2], svg_text(report));
  return files;
}

}  // namespace qccl::tools
