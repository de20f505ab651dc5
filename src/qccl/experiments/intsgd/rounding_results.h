// What a grid of runs measured (`qccl experiment intsgd-rounding` and
// `global-qsgd-quality`, variant_grid.h): each run's curve (one point per
// evaluation), and per model and variant the mean and spread over the
// seeds. rounding_output.h writes them; rounding_report.h prints them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qccl::tools {

// After `step` steps: the mean training loss over the steps since the last
// point, and the test set's loss and metric (accuracy, or perplexity).
struct RoundingPoint {
  std::size_t step = 0;
  double train_loss = 0, test_loss = 0, metric = 0;
};

// One model trained once with one variant and one seed.
struct RoundingRun {
  std::string model, variant, codec;
  std::uint64_t seed = 0;
  std::vector<RoundingPoint> points;
  // The run stopped on non-finite gradients (the trainer's NonFiniteError,
  // whose message `failure` keeps); `points` is then empty.
  bool diverged = false;
  std::string failure;
  double wall_seconds = 0;
  double payload_bytes_per_step = 0;
};

// Mean and sample standard deviation (n − 1; 0 for one value), smallest
// and largest of some values (NaN for none).
struct Spread {
  std::size_t count = 0;
  double mean = 0, sd = 0, min = 0, max = 0;
};
Spread spread_of(const std::vector<double>& values);

// A model's variant over the seeds that finished: its final test metric and
// loss, its last training loss, and the per-seed difference of the metric
// to the baseline variant's with the same seed (the same initial weights
// and data order); metric_vs_sgd keeps the name of IntSGD's baseline.
struct RoundingRow {
  std::string model, variant, codec, metric_name;
  std::size_t runs = 0, diverged = 0;
  Spread metric, test_loss, train_loss, metric_vs_sgd;
};

// The settings a model trained with, as one JSON object (compared when
// results are merged).
struct RoundingModelSettings {
  std::string model;
  nlohmann::json settings;
};

struct RoundingReport {
  std::string experiment = "intsgd-rounding";  // the files' name and the table's title
  std::string baseline = "sgd";                // the variant rows are compared with
  int ranks = 0;
  std::string cpu;
  std::vector<RoundingModelSettings> models;
  std::vector<RoundingRun> runs;
  std::vector<RoundingRow> rows;   // rounding_rows(runs, baseline)
  std::vector<std::string> files;  // written by rank 0
};

// "accuracy" for the image models, "perplexity" for the character models.
std::string metric_name_of(const std::string& model);

// One row per (model, variant), in the order the runs first name them,
// compared with the variant named `baseline`.
std::vector<RoundingRow> rounding_rows(const std::vector<RoundingRun>& runs,
                                       const std::string& baseline = "sgd");

nlohmann::json to_json(const RoundingRun& run);
RoundingRun run_from_json(const nlohmann::json& json);

}  // namespace qccl::tools
