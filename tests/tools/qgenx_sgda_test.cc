// `qccl experiment qgenx-sgda` (Q-GenX Appendix H.1): its files and their
// rows, reproducibility from the seed, a diverging SGDA recorded as such,
// and refused settings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "experiment_files.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/sgda_experiment.h"

namespace qccl::tools {
namespace {

using test_files::csv_header_and_rows;
using test_files::read_text;

SgdaReport run(int ranks, const SgdaConfig& config) {
  return test_files::rank_zero_result(
      ranks, [&](Communicator& comm) { return run_sgda_experiment(comm, config); });
}

SgdaConfig small(const std::string& output) {
  SgdaConfig config;
  config.iterations = 32;
  config.seeds = 2;
  config.game.n = 4;
  config.fit_octaves = 2;
  config.output = output;
  std::filesystem::remove_all(output);
  return config;
}

// CSV: one row per method × noise × seed × recorded T (15 up to T = 32);
// JSON: a summary per method and noise, the theory's slope for Q-GenX only.
TEST(QGenXSgdaExperiment, WritesReproducibleFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "qccl-qgenx-sgda-test";
  const SgdaConfig config = small((dir / "a").string());
  const auto report = run(2, config);
  ASSERT_EQ(report.files.size(), 3u);
  const auto [header, rows] = csv_header_and_rows(read_text(config.output + "/qgenx-sgda.csv"));
  EXPECT_EQ(header, "method,noise,seed,iteration,gap,distance,gamma,boundary,bits_per_coordinate,"
                    "sent_bits_per_coordinate,bound_bits_per_coordinate");
  EXPECT_EQ(rows, 3u * 2u * 2u * 15u);
  const auto json = nlohmann::json::parse(read_text(config.output + "/qgenx-sgda.json"));
  ASSERT_EQ(json["summaries"].size(), 6u);
  for (const auto& s : json["summaries"]) {
    EXPECT_EQ(s["gaps"].size(), 2u);
    EXPECT_EQ(s["diverged"].get<int>(), 0);
    if (s["method"] == "qgenx-de") {
      EXPECT_EQ(s["theory_slope"].get<double>(), s["noise"] == "absolute" ? -0.5 : -1.0);
    } else {
      EXPECT_TRUE(s["theory_slope"].is_null());
    }
  }
  EXPECT_NE(read_text(config.output + "/qgenx-sgda.svg").find("<svg"), std::string::npos);

  test_files::expect_file_follows_the_seed(
      config.output + "/qgenx-sgda.csv", dir, "qgenx-sgda.csv",
      [](const std::string& out, std::uint64_t seed) {
        SgdaConfig again = small(out);
        again.seed = seed;
        run(2, again);
      });
  std::filesystem::remove_all(dir);
}

// SGDA with a constant step of 4 on the nearly bilinear game spirals out
// (each step multiplies the distance to z* by about √(1 + 16s²) ≥ √5) until
// its fp32 vectors overflow: the run stops there, its later gaps are
// infinite, and it is counted as diverged; Q-GenX on the same game is not.
TEST(QGenXSgdaExperiment, RecordsADivergingRun) {
  SgdaConfig config = small("");
  config.methods = {"qgenx-de", "sgda"};
  config.noises = {"relative"};
  config.iterations = 256;
  config.seeds = 1;
  config.sgda_step = 4;
  const auto report = run(2, config);
  ASSERT_EQ(report.summaries.size(), 2u);
  EXPECT_EQ(report.summaries[0].diverged, 0u);
  EXPECT_TRUE(std::isfinite(report.summaries[0].mean));
  EXPECT_EQ(report.summaries[1].diverged, 1u);
  EXPECT_TRUE(std::isinf(report.summaries[1].mean));
  ASSERT_EQ(report.runs.size(), 2u);
  EXPECT_GT(report.runs[1].diverged_at, 1u);
  EXPECT_LT(report.runs[1].diverged_at, 256u);
}

TEST(QGenXSgdaExperiment, RefusesBadSettings) {
  const auto refused = [](const std::function<void(SgdaConfig&)>& change, const std::string& words) {
    SgdaConfig config;
    change(config);
    try {
      validate(config);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([](SgdaConfig& c) { c.methods = {"sgd"}; }, "--methods: unknown 'sgd'");
  refused([](SgdaConfig& c) { c.methods = {"qgenx-eg"}; }, "unknown Q-GenX method 'eg'");
  refused([](SgdaConfig& c) { c.methods = {}; }, "--methods");
  refused([](SgdaConfig& c) { c.codec = "qgenx:bits=9"; }, "bits");
  refused([](SgdaConfig& c) { c.noises = {"gaussian"}; }, "--noise: unknown 'gaussian'");
  refused([](SgdaConfig& c) { c.sgda_step = 0; }, "--sgda-step must be positive");
  refused([](SgdaConfig& c) { c.iterations = 8; }, "--iterations");
  refused([](SgdaConfig& c) { c.fit_octaves = 20; }, "--fit-octaves");
}

}  // namespace
}  // namespace qccl::tools
