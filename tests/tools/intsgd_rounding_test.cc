// `qccl experiment intsgd-rounding`: the variants and their codecs, the
// settings it refuses, the mean and spread of the rows, merging the files
// of several invocations, and a tiny run on two in-process ranks whose
// files hold the expected rows, which a second run with one of its seeds
// reproduces bit for bit, and in which a diverging run is recorded rather
// than ending the experiment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../support/refusal.h"
#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/experiments/intsgd/rounding_experiment.h"
#include "qccl/experiments/intsgd/rounding_output.h"
#include "qccl/experiments/intsgd/rounding_variants.h"
#include "qccl/tools/rounding_command.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() /
                   ("qccl-intsgd-rounding-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

using test::refusal;

TEST(IntSgdRoundingVariants, AreThePapersFourByDefault) {
  const auto chosen = select_rounding_variants({});
  ASSERT_EQ(chosen.size(), 4u);
  EXPECT_EQ(chosen[0].codec, "fp32");
  EXPECT_EQ(chosen[1].codec, "intsgd:round=random,wire=int8");
  EXPECT_EQ(chosen[2].codec, "intsgd:round=deterministic,wire=int8");
  EXPECT_EQ(chosen[3].codec, "intsgd-heuristic:round=deterministic,wire=int8");
  const auto two = select_rounding_variants({"HEURISTIC-int32", "sgd"});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].codec, "intsgd-heuristic:round=deterministic,wire=int32");
  EXPECT_EQ(two[1].name, "sgd");
  const auto unknown = refusal([] { select_rounding_variants({"sgd", "intsgd-nearest"}); });
  EXPECT_NE(unknown.find("--variants: unknown name 'intsgd-nearest'; valid: sgd, intsgd-random"),
            std::string::npos)
      << unknown;
  EXPECT_NE(refusal([] { select_rounding_variants({"sgd", "SGD"}); }).find("listed twice"),
            std::string::npos);
}

TEST(IntSgdRoundingExperiment, RefusesBadSettingsNamingTheOption) {
  RoundingExperimentConfig c;
  EXPECT_NO_THROW(validate(c));
  c.seeds = {};
  EXPECT_NE(refusal([&] { validate(c); }).find("--seeds names no seed"), std::string::npos);
  c.seeds = {1, 2, 1};
  EXPECT_NE(refusal([&] { validate(c); }).find("seed 1 is listed twice"), std::string::npos);
  c.seeds = {1};
  c.overrides.steps = 100;
  c.overrides.eval_every = 30;
  EXPECT_NE(refusal([&] { validate(c); }).find("--eval-every 30 must be at least 1 and divide --steps 100"),
            std::string::npos);
  c.overrides = {};
  c.models = {"cnn", "resnet18"};
  EXPECT_NE(refusal([&] { validate(c); }).find("--models: unknown name 'resnet18'; valid: cnn, char-lstm"),
            std::string::npos);
  c.models = {"char-lstm"};
  c.overrides.lr = -1.0;  // a training setting, refused as `qccl train` refuses it
  EXPECT_NE(refusal([&] { validate(c); }), "");
  EXPECT_EQ(parse_seed_list(" 3, 1 ,2"), (std::vector<std::uint64_t>{3, 1, 2}));
  for (const char* bad : {"1,x", "1,-2", "1.5"}) {
    EXPECT_NE(refusal([&] { parse_seed_list(bad); }).find("is not a non-negative integer"),
              std::string::npos)
        << bad;
  }
}

TEST(IntSgdRoundingResults, MeanSampleSpreadAndDifferenceToSgdOfTheSameSeed) {
  const Spread s = spread_of({0.80, 0.84, 0.82});
  EXPECT_DOUBLE_EQ(s.mean, (0.80 + 0.84 + 0.82) / 3);
  EXPECT_NEAR(s.sd, 0.02, 1e-15);  // sqrt((0.02² + 0.02² + 0) / 2)
  EXPECT_EQ(s.min, 0.80);
  EXPECT_EQ(s.max, 0.84);
  EXPECT_EQ(spread_of({0.5}).sd, 0.0);
  EXPECT_TRUE(std::isnan(spread_of({}).mean));

  const auto run = [](const std::string& variant, std::uint64_t seed, double metric) {
    return RoundingRun{"cnn", variant, variant, seed, {{10, 1.0, 1.1, metric}}, false, "", 1, 0};
  };
  RoundingRun diverged = run("heuristic", 2, 0);
  diverged.diverged = true;
  diverged.points.clear();
  const auto rows = rounding_rows({run("sgd", 1, 0.80), run("heuristic", 1, 0.70),
                                   run("sgd", 2, 0.84), diverged, run("heuristic", 3, 0.5)});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].variant, "sgd");
  EXPECT_EQ(rows[0].metric_vs_sgd.mean, 0.0);
  EXPECT_EQ(rows[1].runs, 3u);
  EXPECT_EQ(rows[1].diverged, 1u);
  EXPECT_EQ(rows[1].metric.count, 2u);
  EXPECT_DOUBLE_EQ(rows[1].metric.mean, 0.6);
  // Only seed 1 has both: 0.70 − 0.80.
  EXPECT_EQ(rows[1].metric_vs_sgd.count, 1u);
  EXPECT_NEAR(rows[1].metric_vs_sgd.mean, -0.10, 1e-15);
}

RoundingReport report_of(std::vector<std::uint64_t> seeds, double lr) {
  RoundingReport r;
  r.ranks = 16;
  r.cpu = "test";
  r.models = {{"cnn", {{"model", "cnn"}, {"lr", lr}}}};
  for (auto seed : seeds) {
    r.runs.push_back({"cnn", "sgd", "fp32", seed, {{5, 2.0, 1.5, 0.5 + 0.01 * seed}}, false, "", 1, 4});
  }
  r.rows = rounding_rows(r.runs);
  return r;
}

TEST(IntSgdRoundingOutput, MergesFilesOfTheSameSettingsAndRefusesOthers) {
  const auto dir = scratch("merge");
  for (const auto& [name, report] :
       {std::pair{"a", report_of({1}, 0.05)}, std::pair{"b", report_of({2, 3}, 0.05)},
        std::pair{"c", report_of({4}, 0.1)}}) {
    fs::create_directories(dir / name);
    write_rounding_outputs(report, (dir / name).string());
  }
  const auto file = [&](const char* name) { return (dir / name / "intsgd-rounding.json").string(); };
  const auto merged = merge_rounding_results({file("a"), file("b")});
  ASSERT_EQ(merged.runs.size(), 3u);
  ASSERT_EQ(merged.rows.size(), 1u);
  EXPECT_EQ(merged.rows[0].metric.count, 3u);
  EXPECT_DOUBLE_EQ(merged.rows[0].metric.mean, 0.52);
  EXPECT_EQ(merged.runs[2].points[0].metric, 0.5 + 0.01 * 3);
  EXPECT_NE(refusal([&] { merge_rounding_results({file("a"), file("c")}); })
                .find("trained cnn with other settings"),
            std::string::npos);
  EXPECT_NE(refusal([&] { merge_rounding_results({file("b"), file("b")}); })
                .find("holds cnn sgd seed 2 again"),
            std::string::npos);
  EXPECT_NE(refusal([&] { merge_rounding_results({(dir / "a" / "intsgd-rounding.csv").string()}); })
                .find("is not an intsgd-rounding.json file"),
            std::string::npos);
  fs::remove_all(dir);
}

// A character LSTM small enough that a run and its evaluations take a
// fraction of a second.
RoundingExperimentConfig tiny(const std::string& output, std::vector<std::uint64_t> seeds) {
  RoundingExperimentConfig c;
  c.models = {"char-lstm"};
  c.variants = {"sgd", "intsgd-determ"};
  c.seeds = std::move(seeds);
  c.overrides.steps = 4;
  c.overrides.eval_every = 2;
  c.overrides.batch = 2;
  c.overrides.hidden = 8;
  c.overrides.sequence_length = 8;
  c.progress = false;
  c.output = output;
  return c;
}

nlohmann::json run(const RoundingExperimentConfig& config) {
  test::run_world(2, [&](Communicator& comm) { run_rounding_experiment(comm, config); });
  return nlohmann::json::parse(read_whole_file(config.output + "/intsgd-rounding.json"));
}

std::size_t line_count(const fs::path& path) {
  std::ifstream in(path);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

TEST(IntSgdRoundingExperiment, TinyRunWritesItsRowsAndIsReproducibleFromItsSeed) {
  const auto dir = scratch("tiny");
  const auto both = run(tiny((dir / "both").string(), {1, 2}));
  EXPECT_EQ(both["ranks"], 2);
  ASSERT_EQ(both["runs"].size(), 4u);  // seed-major: seed 1 sgd, intsgd-determ, seed 2 ...
  for (const auto& r : both["runs"]) {
    EXPECT_FALSE(r["diverged"].get<bool>());
    ASSERT_EQ(r["points"].size(), 2u);
    EXPECT_EQ(r["points"][0]["step"], 2);
    EXPECT_EQ(r["points"][1]["step"], 4);
    EXPECT_GT(r["points"][1]["metric"].get<double>(), 1.0);  // a perplexity
  }
  EXPECT_EQ(both["runs"][1]["codec"], "intsgd:round=deterministic,wire=int8,beta=0.9,eps=1e-08");
  ASSERT_EQ(both["rows"].size(), 2u);
  EXPECT_EQ(both["rows"][1]["metric"]["count"], 2);
  EXPECT_EQ(both["rows"][0]["metric_vs_sgd"]["mean"], 0.0);
  // A header and a line per evaluation of each run.
  EXPECT_EQ(line_count(dir / "both" / "intsgd-rounding.csv"), 1u + 4 * 2);
  EXPECT_GT(fs::file_size(dir / "both" / "intsgd-rounding.svg"), 1000u);

  const auto again = run(tiny((dir / "seed2").string(), {2}));
  ASSERT_EQ(again["runs"].size(), 2u);
  EXPECT_EQ(again["runs"][0]["points"], both["runs"][2]["points"]);
  EXPECT_EQ(again["runs"][1]["points"], both["runs"][3]["points"]);
  fs::remove_all(dir);
}

TEST(IntSgdRoundingExperiment, RecordsADivergedRunAndGoesOn) {
  const auto dir = scratch("diverge");
  auto config = tiny(dir.string(), {1});
  config.overrides.lr = 1e30;
  const auto json = run(config);
  ASSERT_EQ(json["runs"].size(), 2u);
  for (const auto& r : json["runs"]) {
    EXPECT_TRUE(r["diverged"].get<bool>()) << r;
    EXPECT_TRUE(r["points"].empty());
  }
  EXPECT_EQ(json["rows"][0]["diverged"], 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qccl::tools
