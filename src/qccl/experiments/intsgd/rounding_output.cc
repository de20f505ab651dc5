#include "qccl/experiments/intsgd/rounding_output.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::tools {
namespace {

std::string number(double value) {
  if (!std::isfinite(value)) return "";
  std::ostringstream text;
  text << std::setprecision(10) << value;
  return text.str();
}

// "an intsgd-rounding", "a global-qsgd-quality".
std::string article_of(const std::string& word) {
  return std::string("aeiou").find(word.empty() ? 'x' : word[0]) != std::string::npos ? "an" : "a";
}

std::string csv_text(const RoundingReport& report) {
  std::ostringstream csv;
  csv << "model,variant,codec,seed,step,train_loss,test_loss,metric_name,metric,diverged\n";
  for (const auto& r : report.runs) {
    const std::string head = r.model + "," + r.variant + ",\"" + r.codec + "\"," +
                             std::to_string(r.seed) + ",";
    if (r.diverged) csv << head << ",,," << metric_name_of(r.model) << ",,1\n";
    for (const auto& p : r.points) {
      csv << head << p.step << "," << number(p.train_loss) << "," << number(p.test_loss) << ","
          << metric_name_of(r.model) << "," << number(p.metric) << ",0\n";
    }
  }
  return csv.str();
}

nlohmann::json spread_json(const Spread& s) {
  const auto value = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  return {{"count", s.count}, {"mean", value(s.mean)}, {"sd", value(s.sd)},
          {"min", value(s.min)}, {"max", value(s.max)}};
}

std::string json_text(const RoundingReport& report) {
  nlohmann::json json = {{"experiment", report.experiment}, {"baseline", report.baseline},
                         {"ranks", report.ranks},
                         {"cpu", report.cpu}, {"models", nlohmann::json::array()},
                         {"runs", nlohmann::json::array()}, {"rows", nlohmann::json::array()}};
  for (const auto& m : report.models) json["models"].push_back(m.settings);
  for (const auto& r : report.runs) json["runs"].push_back(to_json(r));
  for (const auto& row : report.rows) {
    json["rows"].push_back({{"model", row.model}, {"variant", row.variant},
                            {"codec", row.codec}, {"metric_name", row.metric_name},
                            {"runs", row.runs}, {"diverged", row.diverged},
                            {"metric", spread_json(row.metric)},
                            {"test_loss", spread_json(row.test_loss)},
                            {"train_loss", spread_json(row.train_loss)},
                            {"metric_vs_sgd", spread_json(row.metric_vs_sgd)}});
  }
  return json.dump(2) + "\n";
}

// The mean over a variant's finished runs of one field at each step (the
// runs of one model share their evaluation steps).
PlotSeries mean_curve(const RoundingReport& report, const std::string& model,
                      const std::string& variant, double RoundingPoint::*field, double scale) {
  std::vector<double> sums;
  std::vector<std::size_t> steps;
  std::size_t count = 0;
  for (const auto& r : report.runs) {
    if (r.model != model || r.variant != variant || r.diverged) continue;
    if (sums.empty()) {
      sums.assign(r.points.size(), 0.0);
      for (const auto& p : r.points) steps.push_back(p.step);
    }
    if (r.points.size() != sums.size()) continue;
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += r.points[i].*field;
    ++count;
  }
  PlotSeries series{variant, {}};
  for (std::size_t i = 0; i < sums.size() && count > 0; ++i) {
    series.points.push_back({static_cast<double>(steps[i]), scale * sums[i] / count});
  }
  return series;
}

// Per model, the training loss and the test metric against the step.
std::string svg_text(const RoundingReport& report) {
  std::vector<PlotPanel> panels;
  for (const auto& m : report.models) {
    const bool accuracy = metric_name_of(m.model) == "accuracy";
    const std::string scale = m.model + ", " + std::to_string(report.ranks) + " ranks, mean of seeds";
    PlotPanel loss{"training loss, " + scale, "step", "training loss", false, false, {}, true};
    PlotPanel metric{(accuracy ? "test accuracy, " : "test perplexity, ") + scale, "step",
                     accuracy ? "test accuracy (%)" : "test perplexity", false, false, {}, true};
    for (const auto& row : report.rows) {
      if (row.model != m.model) continue;
      loss.series.push_back(mean_curve(report, m.model, row.variant, &RoundingPoint::train_loss, 1));
      metric.series.push_back(mean_curve(report, m.model, row.variant, &RoundingPoint::metric,
                                         accuracy ? 100 : 1));
    }
    panels.push_back(loss);
    panels.push_back(metric);
  }
  return render_svg(panels);
}

RoundingReport read_results(const std::string& path, const std::string& experiment) {
  RoundingReport report;
  report.experiment = experiment;
  try {
    const auto json = nlohmann::json::parse(read_whole_file(path));
    if (json.at("experiment") != experiment) throw InvalidArgument("another experiment's");
    report.ranks = json.at("ranks").get<int>();
    report.cpu = json.at("cpu").get<std::string>();
    for (const auto& m : json.at("models")) {
      report.models.push_back({m.at("model").get<std::string>(), m});
    }
    for (const auto& r : json.at("runs")) report.runs.push_back(run_from_json(r));
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("--merge: '" + path + "' is not " + article_of(experiment) + " " +
                          experiment + ".json file (" + e.what() + ")");
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("--merge: '" + path + "' is not " + article_of(experiment) + " " +
                          experiment + ".json file (" + e.what() + ")");
  }
  return report;
}

// Adds `part`'s models and runs to `all`, refusing what cannot be compared.
void add_results(RoundingReport& all, const RoundingReport& part, const std::string& path) {
  if (all.ranks != 0 && all.ranks != part.ranks) {
    throw InvalidArgument("--merge: '" + path + "' ran on " + std::to_string(part.ranks) +
                          " ranks, the files before it on " + std::to_string(all.ranks));
  }
  all.ranks = part.ranks;
  if (all.cpu.empty()) all.cpu = part.cpu;
  for (const auto& m : part.models) {
    const auto same = std::find_if(all.models.begin(), all.models.end(),
                                   [&](const RoundingModelSettings& s) { return s.model == m.model; });
    if (same == all.models.end()) {
      all.models.push_back(m);
    } else if (same->settings != m.settings) {
      throw InvalidArgument("--merge: '" + path + "' trained " + m.model +
                            " with other settings (" + m.settings.dump() + " against " +
                            same->settings.dump() + "); merge only runs of the same settings");
    }
  }
  for (const auto& r : part.runs) {
    for (const auto& earlier : all.runs) {
      if (earlier.model == r.model && earlier.variant == r.variant && earlier.seed == r.seed) {
        throw InvalidArgument("--merge: '" + path + "' holds " + r.model + " " + r.variant +
                              " seed " + std::to_string(r.seed) +
                              " again; merge each run once");
      }
    }
    all.runs.push_back(r);
  }
}

}  // namespace

std::vector<std::string> rounding_output_files(const std::string& directory,
                                               const std::string& experiment) {
  const std::filesystem::path dir(directory);
  return {(dir / (experiment + ".csv")).string(), (dir / (experiment + ".json")).string(),
          (dir / (experiment + ".svg")).string()};
}

std::vector<std::string> write_rounding_outputs(const RoundingReport& report,
                                                const std::string& directory) {
  const auto files = rounding_output_files(directory, report.experiment);
  write_file_atomically(files[0], csv_text(report));
  write_file_atomically(files[1], json_text(report));
  write_file_atomically(files[2], svg_text(report));
  return files;
}

RoundingReport merge_rounding_results(const std::vector<std::string>& json_files,
                                      const std::string& experiment, const std::string& baseline) {
  if (json_files.empty()) throw InvalidArgument("--merge names no file");
  RoundingReport all;
  all.experiment = experiment;
  all.baseline = baseline;
  for (const auto& path : json_files) add_results(all, read_results(path, experiment), path);
  all.rows = rounding_rows(all.runs, baseline);
  return all;
}

}  // namespace qccl::tools
