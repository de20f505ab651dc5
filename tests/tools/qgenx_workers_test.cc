// `qccl experiment qgenx-workers` (Q-GenX Theorems 3–4 in K): its files and
// their rows, reproducibility from the seed, the K-fit's numbers, and
// refused settings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "experiment_files.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/workers_experiment.h"

namespace qccl::tools {
namespace {

using test_files::csv_header_and_rows;
using test_files::read_text;

WorkersConfig small(const std::string& output) {
  WorkersConfig config;
  config.workers = {1, 2, 4};
  config.codecs = {"fp32", "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed"};
  config.iterations = 32;
  config.seeds = 2;
  config.game.n = 4;
  config.timeout_ms = 30000;
  config.output = output;
  std::filesystem::remove_all(output);
  return config;
}

// CSV: one row per K × noise × codec × seed × recorded T (T = ⌊2^(j/4)⌋ up
// to 32: 1, 2, 3, 4, 5, 6, 8, 9, 11, 13, 16, 19, 22, 26, 32); JSON: a row
// per codec, noise and K with each seed's final gap, their mean and spread,
// and a fit per codec and noise over every (K, gap); SVG: a document. A
// second run writes the same bytes; another seed does not.
TEST(QGenXWorkersExperiment, WritesTheSweepsRowsReproducibly) {
  const auto dir = std::filesystem::temp_directory_path() / "qccl-qgenx-workers-test";
  const WorkersConfig config = small((dir / "a").string());
  const auto report = run_workers_experiment(config);
  ASSERT_EQ(report.files.size(), 3u);
  const auto [header, rows] = csv_header_and_rows(read_text(config.output + "/qgenx-workers.csv"));
  EXPECT_EQ(header, "codec,noise,workers,seed,iteration,gap,distance,gamma,boundary,"
                    "bits_per_coordinate,sent_bits_per_coordinate,bound_bits_per_coordinate");
  EXPECT_EQ(rows, 3u * 2u * 2u * 2u * 15u);

  const auto json = nlohmann::json::parse(read_text(config.output + "/qgenx-workers.json"));
  ASSERT_EQ(json["rows"].size(), 2u * 2u * 3u);
  for (const auto& row : json["rows"]) {
    ASSERT_EQ(row["gaps"].size(), 2u);
    const double a = row["gaps"][0].get<double>(), b = row["gaps"][1].get<double>();
    EXPECT_GT(a, 0);
    EXPECT_DOUBLE_EQ(row["mean"].get<double>(), (a + b) / 2);
    EXPECT_NEAR(row["spread"].get<double>(), std::abs(a - b) / std::sqrt(2.0), 1e-12 * (a + b));
  }
  ASSERT_EQ(json["fits"].size(), 4u);
  for (const auto& fit : json["fits"]) {
    EXPECT_EQ(fit["theory_slope"].get<double>(), fit["noise"] == "absolute" ? -0.5 : -1.0);
    EXPECT_EQ(fit["points"].get<int>(), 6);
    EXPECT_TRUE(std::isfinite(fit["slope"].get<double>()));
    EXPECT_GT(fit["slope_error"].get<double>(), 0);
  }
  const std::string svg = read_text(config.output + "/qgenx-workers.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("K^-1 relative (Theorem 4)"), std::string::npos);

  test_files::expect_file_follows_the_seed(
      config.output + "/qgenx-workers.csv", dir, "qgenx-workers.csv",
      [](const std::string& out, std::uint64_t seed) {
        WorkersConfig again = small(out);
        again.seed = seed;
        run_workers_experiment(again);
      });
  std::filesystem::remove_all(dir);
}

TEST(QGenXWorkersExperiment, RefusesBadSettings) {
  const auto refused = [](const std::function<void(WorkersConfig&)>& change, const std::string& words) {
    WorkersConfig config;
    config.codecs = {"fp32"};
    change(config);
    try {
      validate(config);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([](WorkersConfig& c) { c.workers = {4}; }, "--workers: at least two");
  refused([](WorkersConfig& c) { c.workers = {4, 2}; }, "in increasing order");
  refused([](WorkersConfig& c) { c.workers = {0, 2}; }, "each K must be in 1..256");
  refused([](WorkersConfig& c) { c.workers = {1, 512}; }, "not 512");
  refused([](WorkersConfig& c) { c.method = "eg"; }, "unknown Q-GenX method 'eg'");
  refused([](WorkersConfig& c) { c.codecs = {}; }, "--codec");
  refused([](WorkersConfig& c) { c.codecs = {"qgenx:bits=9"}; }, "bits");
  refused([](WorkersConfig& c) { c.noises = {"gaussian"}; }, "--noise: unknown 'gaussian'");
  refused([](WorkersConfig& c) { c.iterations = 8; }, "--iterations");
  refused([](WorkersConfig& c) { c.seeds = 0; }, "--seeds");
  refused([](WorkersConfig& c) { c.game.alpha = 0; }, "co-coercive");
  refused([](WorkersConfig& c) { c.algorithm = Algorithm::native; }, "--algo");
}

}  // namespace
}  // namespace qccl::tools
