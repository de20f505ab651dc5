// `qccl experiment global-qsgd-quality`: the variants and the paper's
// Table 4 numbers beside them, the settings it refuses, merging the files
// of several invocations, and a tiny GPT run on the paper's 4 workers whose
// table has a row per variant with finite perplexities that differ between
// fp32 and the codecs, and which a second run of one seed reproduces bit
// for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "../support/refusal.h"
#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/experiments/global_qsgd/quality_experiment.h"
#include "qccl/experiments/global_qsgd/quality_report.h"
#include "qccl/experiments/global_qsgd/quality_variants.h"
#include "qccl/experiments/intsgd/rounding_output.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() /
                   ("qccl-gq-quality-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

using test::refusal;

TEST(GlobalQsgdQualityVariants, AreTable4sQuantizationRowsByDefault) {
  const auto chosen = select_quality_variants({});
  ASSERT_EQ(chosen.size(), 4u);
  EXPECT_EQ(chosen[0].run.codec, "fp32");
  EXPECT_EQ(chosen[1].run.codec, "global-qsgd:bits=8");
  EXPECT_EQ(chosen[2].run.codec, "global-qsgd:bits=4");
  EXPECT_EQ(chosen[3].run.codec, "global-qsgd:bits=8,dither=exp");
  // Table 4's Transformer-XL column.
  EXPECT_EQ(chosen[0].paper_ppl, 22.99);
  EXPECT_EQ(chosen[2].paper_ppl, 44.95);
  EXPECT_EQ(chosen[3].paper_sd, 0.12);
  const auto two = select_quality_variants({"PowerSGD-32", "qsgd-8"});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].run.codec, "powersgd:rank=32");
  EXPECT_EQ(two[1].paper_ppl, 30.82);
  EXPECT_NE(refusal([] { select_quality_variants({"linear-2"}); })
                .find("--variants: unknown name 'linear-2'; valid: fp32, linear-8, linear-4, exp-8"),
            std::string::npos);
}

TEST(GlobalQsgdQualityExperiment, RefusesBadSettingsNamingTheOption) {
  QualityExperimentConfig c;
  EXPECT_NO_THROW(validate(c));
  EXPECT_EQ(quality_plan(c).train.warmup_steps, c.plan.steps / 10);
  EXPECT_EQ(quality_plan(c).train.optimizer, "adam");
  c.seeds = {2, 2};
  EXPECT_NE(refusal([&] { validate(c); }).find("seed 2 is listed twice"), std::string::npos);
  c.seeds = {1};
  c.plan.eval_every = 7;
  EXPECT_NE(refusal([&] { validate(c); }).find("--eval-every 7 must be at least 1 and divide"),
            std::string::npos);
  c.plan.eval_every = 50;
  c.plan.train.lr = -1;  // refused as `qccl train` refuses it
  EXPECT_NE(refusal([&] { validate(c); }), "");
}

// A GPT small enough that a run and its evaluations take about a second.
QualityExperimentConfig tiny(const std::string& output, std::vector<std::uint64_t> seeds) {
  QualityExperimentConfig c;
  c.plan.train.hidden = 64;
  c.plan.train.layers = 1;
  c.plan.train.sequence_length = 8;
  c.plan.train.batch = 2;
  c.plan.steps = 4;
  c.plan.eval_every = 2;
  c.seeds = std::move(seeds);
  c.progress = false;
  c.output = output;
  return c;
}

nlohmann::json run(const QualityExperimentConfig& config, std::string* table = nullptr) {
  test::run_world(4, [&](Communicator& comm) {
    const auto report = run_quality_experiment(comm, config);
    if (comm.rank() == 0 && table != nullptr) {
      std::ostringstream out;
      print_quality_report(out, report);
      *table = out.str();
    }
  });
  return nlohmann::json::parse(read_whole_file(config.output + "/global-qsgd-quality.json"));
}

double final_metric(const nlohmann::json& run) {
  return run["points"].back()["metric"].get<double>();
}

TEST(GlobalQsgdQualityExperiment, TinyRunOnFourRanksHasDistinctRowsReproducibleFromTheSeed) {
  const auto dir = scratch("tiny");
  std::string table;
  const auto both = run(tiny((dir / "both").string(), {1, 2}), &table);
  EXPECT_EQ(both["experiment"], "global-qsgd-quality");
  EXPECT_EQ(both["baseline"], "fp32");
  EXPECT_EQ(both["ranks"], 4);
  ASSERT_EQ(both["runs"].size(), 8u);  // seed-major: seed 1's four variants, then seed 2's
  for (const auto& r : both["runs"]) {
    EXPECT_FALSE(r["diverged"].get<bool>()) << r;
    ASSERT_EQ(r["points"].size(), 2u);
    EXPECT_EQ(r["points"][1]["step"], 4);
    EXPECT_TRUE(std::isfinite(final_metric(r)));
    EXPECT_GT(final_metric(r), 1.0);  // a perplexity
  }
  for (std::size_t seed = 0; seed < 2; ++seed) {
    const double fp32 = final_metric(both["runs"][4 * seed]);
    for (std::size_t v = 1; v < 4; ++v) {
      EXPECT_NE(final_metric(both["runs"][4 * seed + v]), fp32)
          << both["runs"][4 * seed + v]["variant"] << " seed " << seed + 1;
    }
  }
  ASSERT_EQ(both["rows"].size(), 4u);
  EXPECT_EQ(both["rows"][2]["variant"], "linear-4");
  EXPECT_EQ(both["rows"][3]["metric"]["count"], 2);
  EXPECT_EQ(both["rows"][0]["metric_vs_sgd"]["mean"], 0.0);  // fp32 against itself
  for (const char* cell : {"test ppl (mean ± sd)", "Table 4, Transformer-XL", "22.99 ± 0.11",
                           "32.35 ± 0.71", "44.95 ± 0.93", "23.68 ± 0.12", "+95.5%"}) {
    EXPECT_NE(table.find(cell), std::string::npos) << cell << "\n" << table;
  }
  EXPECT_GT(fs::file_size(dir / "both" / "global-qsgd-quality.svg"), 1000u);

  const auto again = run(tiny((dir / "seed2").string(), {2}));
  ASSERT_EQ(again["runs"].size(), 4u);
  for (std::size_t v = 0; v < 4; ++v) {
    EXPECT_EQ(again["runs"][v]["points"], both["runs"][4 + v]["points"]) << v;
  }

  // Seed 1's runs of the first invocation, written as a file of their own,
  // merge with the second invocation's into the rows of the first;
  // another experiment's file is refused.
  RoundingReport seed1;
  seed1.experiment = "global-qsgd-quality";
  seed1.baseline = "fp32";
  seed1.ranks = 4;
  seed1.models = {{"gpt", both["models"][0]}};
  for (std::size_t v = 0; v < 4; ++v) seed1.runs.push_back(run_from_json(both["runs"][v]));
  seed1.rows = rounding_rows(seed1.runs, "fp32");
  fs::create_directories(dir / "seed1");
  write_rounding_outputs(seed1, (dir / "seed1").string());
  const auto file = [&](const char* name) {
    return (dir / name / "global-qsgd-quality.json").string();
  };
  const auto merged = merge_rounding_results({file("seed1"), file("seed2")},
                                             "global-qsgd-quality", "fp32");
  ASSERT_EQ(merged.rows.size(), 4u);
  for (std::size_t v = 0; v < 4; ++v) {
    EXPECT_DOUBLE_EQ(merged.rows[v].metric.mean, both["rows"][v]["metric"]["mean"].get<double>());
  }
  EXPECT_NE(refusal([&] {
              merge_rounding_results({file("seed1")}, "intsgd-rounding", "sgd");
            }).find("is not an intsgd-rounding.json file"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qccl::tools
