#include "qccl/experiments/intsgd/rounding_results.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qccl::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const RoundingRun* find_run(const std::vector<RoundingRun>& runs, const std::string& model,
                            const std::string& variant, std::uint64_t seed) {
  for (const auto& r : runs) {
    if (r.model == model && r.variant == variant && r.seed == seed) return &r;
  }
  return nullptr;
}

// The row of one model's variant: its finished runs' last points, and the
// difference to the baseline's run of the same seed where that finished too.
RoundingRow row_of(const std::vector<RoundingRun>& runs, const std::string& model,
                   const std::string& variant, const std::string& baseline) {
  RoundingRow row{model, variant, "", metric_name_of(model), 0, 0, {}, {}, {}, {}};
  std::vector<double> metric, test_loss, train_loss, vs_sgd;
  for (const auto& r : runs) {
    if (r.model != model || r.variant != variant) continue;
    row.codec = r.codec;
    ++row.runs;
    if (r.diverged || r.points.empty()) {
      ++row.diverged;
      continue;
    }
    const auto& last = r.points.back();
    metric.push_back(last.metric);
    test_loss.push_back(last.test_loss);
    train_loss.push_back(last.train_loss);
    const RoundingRun* base = find_run(runs, model, baseline, r.seed);
    if (base != nullptr && !base->diverged && !base->points.empty()) {
      vs_sgd.push_back(last.metric - base->points.back().metric);
    }
  }
  row.metric = spread_of(metric);
  row.test_loss = spread_of(test_loss);
  row.train_loss = spread_of(train_loss);
  row.metric_vs_sgd = spread_of(vs_sgd);
  return row;
}

}  // namespace

Spread spread_of(const std::vector<double>& values) {
  Spread s{values.size(), kNaN, kNaN, kNaN, kNaN};
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

std::string metric_name_of(const std::string& model) {
  return model == "char-lstm" || model == "gpt" ? "perplexity" : "accuracy";
}

std::vector<RoundingRow> rounding_rows(const std::vector<RoundingRun>& runs,
                                       const std::string& baseline) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto& r : runs) {
    const std::pair<std::string, std::string> key{r.model, r.variant};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::vector<RoundingRow> rows;
  for (const auto& [model, variant] : keys) rows.push_back(row_of(runs, model, variant, baseline));
  return rows;
}

nlohmann::json to_json(const RoundingRun& run) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : run.points) {
    points.push_back({{"step", p.step},
                      {"train_loss", p.train_loss},
                      {"test_loss", p.test_loss},
                      {"metric", p.metric}});
  }
  return {{"model", run.model},
          {"variant", run.variant},
          {"codec", run.codec},
          {"seed", run.seed},
          {"diverged", run.diverged},
          {"failure", run.failure},
          {"wall_seconds", run.wall_seconds},
          {"payload_bytes_per_step", run.payload_bytes_per_step},
          {"points", points}};
}

RoundingRun run_from_json(const nlohmann::json& json) {
  RoundingRun run;
  run.model = json.at("model").get<std::string>();
  run.variant = json.at("variant").get<std::string>();
  run.codec = json.at("codec").get<std::string>();
  run.seed = json.at("seed").get<std::uint64_t>();
  run.diverged = json.at("diverged").get<bool>();
  run.failure = json.at("failure").get<std::string>();
  run.wall_seconds = json.at("wall_seconds").get<double>();
  run.payload_bytes_per_step = json.at("payload_bytes_per_step").get<double>();
  for (const auto& p : json.at("points")) {
    run.points.push_back({p.at("step").get<std::size_t>(), p.at("train_loss").get<double>(),
                          p.at("test_loss").get<double>(), p.at("metric").get<double>()});
  }
  return run;
}

}  // namespace qccl::tools
