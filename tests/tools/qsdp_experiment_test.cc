// `qccl experiment qsdp`: the variants' names and codecs and the errors a
// bad list gets, the comparisons derived from the summaries, and a tiny run
// on two in-process ranks whose files parse, whose rows agree with each
// other and with what the codecs send, and which a second run reproduces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/tools/qsdp_command.h"
#include "qccl/experiments/qsdp/qsdp_experiment.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

TEST(QsdpVariants, AreNamedAsThePaperNamesThem) {
  const std::vector<std::string> expected{
      "baseline",         "fp32",             "W8G8",            "W8G8-nobucket",
      "W6G4",             "W5G4",             "W4G4",            "W4G32",
      "W6G4-learned",     "W5G4-learned",     "W4G4-learned",    "W4G32-learned",
      "W6G4-learned-sgd", "W5G4-learned-sgd", "W4G4-learned-sgd", "W4G32-learned-sgd"};
  EXPECT_EQ(qsdp_variant_names(), expected);
  const auto all = qsdp_variants(25);
  EXPECT_EQ(all[0].weights_codec, "fp32");
  EXPECT_EQ(all[0].gradients_codec, "fp16");
  EXPECT_EQ(all[2].weights_codec, "minmax:bits=8,bucket=1024,rounding=shift");
  EXPECT_EQ(all[2].gradients_codec, "minmax:bits=8,bucket=1024");
  EXPECT_EQ(all[3].weights_codec, "minmax:bits=8,bucket=0,rounding=shift");
  EXPECT_EQ(all[5].weights_codec, "minmax:bits=5,bucket=1024,rounding=shift");
  EXPECT_EQ(all[5].gradients_codec, "minmax:bits=4,bucket=1024");
  EXPECT_EQ(all[7].weights_codec, "minmax:bits=4,bucket=1024,rounding=shift");
  EXPECT_EQ(all[7].gradients_codec, "fp32");
}

// A learned variant is its uniform variant with learned levels and nothing
// else: the weights stay on the random-shift lattice, the gradients keep
// stochastic rounding (or fp32), both fitted on the paper's schedule, by
// coordinate descent or, for "-learned-sgd", by Algorithm 2.
TEST(QsdpVariants, LearnedVariantsChangeOnlyTheLevels) {
  const auto all = qsdp_variants(25);
  std::size_t learned = 0;
  for (const auto& v : all) {
    const auto cut = v.name.find("-learned");
    if (cut == std::string::npos) continue;
    ++learned;
    const auto base = select_qsdp_variants({v.name.substr(0, cut)}, 25).front();
    const std::string levels = ",levels=learned,refit=25,schedule=paper" +
                               std::string(v.name.ends_with("-sgd") ? ",fit=sgd" : "");
    EXPECT_EQ(v.weights_codec, base.weights_codec + levels) << v.name;
    EXPECT_NE(v.weights_codec.find("rounding=shift"), std::string::npos) << v.name;
    EXPECT_EQ(v.gradients_codec, base.gradients_codec == "fp32" ? "fp32" : base.gradients_codec + levels)
        << v.name;
  }
  EXPECT_EQ(learned, 8u);
}

TEST(QsdpVariants, SelectsByNameInTheGivenOrderIgnoringCase) {
  const auto chosen = select_qsdp_variants({"w4g4-LEARNED", "fp32", "W8G8"}, 3);
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(chosen[0].name, "W4G4-learned");
  EXPECT_EQ(chosen[0].weights_codec,
            "minmax:bits=4,bucket=1024,rounding=shift,levels=learned,refit=3,schedule=paper");
  EXPECT_EQ(chosen[1].name, "fp32");
  EXPECT_EQ(chosen[2].name, "W8G8");
  EXPECT_EQ(select_qsdp_variants({}, 3).size(), 16u);
  EXPECT_EQ(split_variant_list(" baseline, W8G8,,fp32 "),
            (std::vector<std::string>{"baseline", "W8G8", "fp32"}));
}

TEST(QsdpVariants, RefusesUnknownAndRepeatedNamesListingTheValidOnes) {
  try {
    select_qsdp_variants({"fp32", "W9G9"}, 1);
    FAIL() << "W9G9 was accepted";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown variant 'W9G9'"), std::string::npos) << message;
    EXPECT_NE(message.find("valid: baseline, fp32, W8G8, W8G8-nobucket"), std::string::npos)
        << message;
  }
  EXPECT_THROW(select_qsdp_variants({"W8G8", "w8g8"}, 1), InvalidArgument);
  EXPECT_THROW(select_qsdp_variants({"W9G4"}, 1), InvalidArgument);
  // Beyond the list: any WxGy[-nobucket] with uniform levels.
  const auto swept = select_qsdp_variants({"w6g6-nobucket", "W3G32"}, 1);
  EXPECT_EQ(swept[0].name, "W6G6-nobucket");
  EXPECT_EQ(swept[0].weights_codec, "minmax:bits=6,bucket=0,rounding=shift");
  EXPECT_EQ(swept[0].gradients_codec, "minmax:bits=6,bucket=0");
  EXPECT_EQ(swept[1].gradients_codec, "fp32");
}

// The paper's first fit, step 400 of 4800, scaled to the run.
TEST(QsdpVariants, DefaultRefitIsTheTwelfthOfTheRunAtLeastOne) {
  EXPECT_EQ(default_qsdp_refit(4800), 400u);
  EXPECT_EQ(default_qsdp_refit(240), 20u);
  EXPECT_EQ(default_qsdp_refit(150), 13u);  // 12.5 rounds up
  EXPECT_EQ(default_qsdp_refit(3), 1u);
  EXPECT_EQ(default_qsdp_refit(0), 1u);
  QsdpExperimentConfig config;
  config.steps = 120;
  EXPECT_EQ(refit_of(config), 10u);
  config.refit = 7;
  EXPECT_EQ(refit_of(config), 7u);
}

TEST(QsdpExperiment, ValidateNamesTheBadSetting) {
  QsdpExperimentConfig config;
  EXPECT_NO_THROW(validate(config));
  config.steps = 0;
  EXPECT_THROW(validate(config), InvalidArgument);
  config.steps = 10;
  config.train.optimizer = "lion";
  try {
    validate(config);
    FAIL() << "lion was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown optimizer 'lion'"), std::string::npos);
  }
  config.train.optimizer = "adamw";
  config.seeds = {1, 2, 1};
  EXPECT_THROW(validate(config), InvalidArgument);
  config.seeds = {1, 2};
  config.train.algorithm = Algorithm::native;  // the sharded engine needs ring or halving-doubling
  EXPECT_THROW(validate(config), InvalidArgument);
  config.train.algorithm = Algorithm::ring;
  config.variants = {"W9G9"};
  EXPECT_THROW(validate(config), InvalidArgument);
}

QsdpRow row_of(const std::string& name, double perplexity, double compute_seconds) {
  QsdpRow row;
  row.variant.name = name;
  row.summary.final_metric = perplexity;
  row.perplexities = {perplexity};
  row.summary.split.data = 0.001;
  row.summary.split.compute = compute_seconds;
  row.summary.split.waiting = 0.002;
  row.summary.split.optimizer = 0.003;
  row.summary.split.encode = 5.0;  // the communication thread's: not part of the step
  return row;
}

TEST(QsdpExperiment, ComparesEveryRowWithTheBaselineAndFp32) {
  std::vector<QsdpRow> rows{row_of("baseline", 10.0, 0.044), row_of("fp32", 9.0, 0.094),
                            row_of("W8G8", 11.0, 0.019)};
  compare_rows(rows);
  EXPECT_DOUBLE_EQ(rows[0].step_ms, 50.0);
  EXPECT_DOUBLE_EQ(rows[1].step_ms, 100.0);
  EXPECT_DOUBLE_EQ(rows[2].step_ms, 25.0);
  EXPECT_EQ(rows[0].relative_perplexity_percent, 0.0);
  EXPECT_NEAR(rows[1].relative_perplexity_percent, -10.0, 1e-12);
  EXPECT_NEAR(rows[2].relative_perplexity_percent, 10.0, 1e-12);
  EXPECT_EQ(rows[1].speedup_vs_fp32, 1.0);
  EXPECT_DOUBLE_EQ(rows[2].speedup_vs_fp32, 4.0);
  EXPECT_DOUBLE_EQ(rows[0].speedup_vs_fp32, 2.0);
  EXPECT_EQ(rows[0].speedup_vs_baseline, 1.0);
  EXPECT_DOUBLE_EQ(rows[2].speedup_vs_baseline, 2.0);

  // Two seeds: each against the baseline's run of the same seed, then the mean.
  std::vector<QsdpRow> seeded{row_of("baseline", 10.0, 0.044), row_of("W8G8", 11.0, 0.019)};
  seeded[0].perplexities = {10.0, 20.0};
  seeded[1].perplexities = {11.0, 19.0};
  compare_rows(seeded);
  EXPECT_NEAR(seeded[1].relative_percents[0], 10.0, 1e-12);
  EXPECT_NEAR(seeded[1].relative_percents[1], -5.0, 1e-12);
  EXPECT_NEAR(seeded[1].relative_perplexity_percent, 2.5, 1e-12);
  EXPECT_NEAR(spread_of(seeded[1].relative_percents), 15.0 / std::sqrt(2.0), 1e-12);

  std::vector<QsdpRow> without{row_of("W8G8", 11.0, 0.019)};
  compare_rows(without);
  EXPECT_TRUE(std::isnan(without[0].relative_perplexity_percent));
  EXPECT_TRUE(std::isnan(without[0].speedup_vs_fp32));
  EXPECT_TRUE(std::isnan(without[0].speedup_vs_baseline));
}

QsdpExperimentConfig tiny(const std::string& output) {
  QsdpExperimentConfig c;
  c.variants = {"fp32", "W8G8", "baseline"};
  c.steps = 4;
  c.output = output;
  c.train.hidden = 32;
  c.train.layers = 1;
  c.train.sequence_length = 16;
  c.train.batch = 4;
  c.train.progress = false;
  c.seeds = {1, 2};
  return c;
}

nlohmann::json run(const QsdpExperimentConfig& config) {
  test::run_world(2, [&](Communicator& comm) { run_qsdp_experiment(comm, config); });
  return nlohmann::json::parse(read_whole_file(config.output + "/qsdp.json"));
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(QsdpExperiment, WritesConsistentRowsAndIsReproducible) {
  const fs::path root =
      fs::temp_directory_path() / ("qccl-qsdp-experiment-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto json = run(tiny((root / "a").string()));

  EXPECT_EQ(json["experiment"], "qsdp");
  EXPECT_EQ(json["ranks"], 2);
  EXPECT_EQ(json["steps"], 4);
  EXPECT_EQ(json["refit"], 1);  // 4/12 rounds to 0: at least 1
  EXPECT_EQ(json["seeds"], nlohmann::json::array({1, 2}));
  const auto& rows = json["variants"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["variant"], "fp32");
  EXPECT_EQ(rows[1]["variant"], "W8G8");
  EXPECT_EQ(rows[2]["variant"], "baseline");
  for (const auto& row : rows) {
    EXPECT_EQ(row["steps"], 4);
    const double perplexity = row["perplexity"].get<double>();
    EXPECT_TRUE(std::isfinite(perplexity) && perplexity > 1.0) << row;
    EXPECT_GT(row["step_ms"].get<double>(), 0.0);
    EXPECT_GT(row["sent_bytes_per_step"].get<double>(), 0.0);
    EXPECT_GT(row["peak_rss_mib"].get<double>(), 1.0);
    // Uniform initial weights span 2/(1.4826·0.5) = 2.70 of their bulk's σ
    // (the median absolute deviation of U(−a, a) is a/2); 4 steps barely
    // move them.
    const double median = row["weights_range_over_bulk_sd"]["median"].get<double>();
    const double widest = row["weights_range_over_bulk_sd"]["widest"].get<double>();
    EXPECT_GT(median, 2.4) << row;
    EXPECT_LT(median, 3.5) << row;
    EXPECT_GE(widest, median) << row;
    EXPECT_NEAR(row["step_ms"].get<double>(),
                row["split_ms"]["data"].get<double>() + row["split_ms"]["compute"].get<double>() +
                    row["split_ms"]["waiting"].get<double>() +
                    row["split_ms"]["optimizer"].get<double>(),
                1e-9);
  }
  // Per seed: the fp32 master weights' perplexity, and the quantized
  // weights' (Q^w) where the weights travel quantized: W8G8 only; the
  // baseline against itself is 0% for every seed.
  for (const auto& row : rows) {
    ASSERT_EQ(row["perplexities"].size(), 2u) << row;
    ASSERT_EQ(row["computed_perplexities"].size(), 2u) << row;
  }
  EXPECT_TRUE(rows[0]["computed_perplexities"][0].is_null());
  EXPECT_TRUE(rows[2]["computed_perplexities"][1].is_null());
  for (int s = 0; s < 2; ++s) {
    const double quantized = rows[1]["computed_perplexities"][s].get<double>();
    EXPECT_TRUE(std::isfinite(quantized) && quantized > 1.0) << rows[1];
    EXPECT_NE(quantized, rows[1]["perplexities"][s].get<double>());
    EXPECT_EQ(rows[2]["relative_percents"][s].get<double>(), 0.0);
  }
  EXPECT_NE(rows[0]["perplexities"][0], rows[0]["perplexities"][1]);  // the seeds differ
  EXPECT_EQ(rows[0]["speedup_vs_fp32"].get<double>(), 1.0);
  EXPECT_EQ(rows[2]["speedup_vs_baseline"].get<double>(), 1.0);
  EXPECT_EQ(rows[2]["relative_perplexity_percent"].get<double>(), 0.0);
  EXPECT_NEAR(rows[1]["speedup_vs_fp32"].get<double>(),
              rows[0]["step_ms"].get<double>() / rows[1]["step_ms"].get<double>(), 1e-9);
  // 8-bit indices send about a quarter of fp32's bytes, fp16 half.
  EXPECT_LT(rows[1]["sent_bytes_per_step"].get<double>(),
            0.5 * rows[0]["sent_bytes_per_step"].get<double>());
  EXPECT_LT(rows[2]["sent_bytes_per_step"].get<double>(),
            rows[0]["sent_bytes_per_step"].get<double>());
  EXPECT_EQ(rows[1]["weights_codec"].get<std::string>().rfind("minmax:bits=8", 0), 0u);

  const auto csv = lines_of(root / "a" / "qsdp.csv");
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_EQ(csv[0].rfind("variant,weights_codec,gradients_codec,steps,seeds,perplexity,", 0), 0u);
  EXPECT_EQ(csv[1].rfind("fp32,\"fp32\",\"fp32\",4,2,", 0), 0u) << csv[1];
  const std::string svg = read_whole_file((root / "a" / "qsdp.svg").string());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("2 W8G8"), std::string::npos);

  // The same seed and settings train the same models.
  const auto again = run(tiny((root / "b").string()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(again["variants"][i]["perplexities"], rows[i]["perplexities"]) << i;
    EXPECT_EQ(again["variants"][i]["computed_perplexities"], rows[i]["computed_perplexities"]) << i;
    EXPECT_EQ(again["variants"][i]["sent_bytes_per_step"], rows[i]["sent_bytes_per_step"]) << i;
  }
  fs::remove_all(root);
}

// 2 of every 32 or more rows of a block's weights made 16 times larger: the
// matrix's range grows 16-fold, while the bulk's σ (the median absolute
// deviation) moves by the few percent that 1/16 of the values leaving the
// middle shift a median: range/σ_bulk widens about 15×; 10× leaves room for
// the 4 training steps.
TEST(QsdpExperiment, OutlierRowsWidenTheWeightsRange) {
  const fs::path root =
      fs::temp_directory_path() / ("qccl-qsdp-outliers-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto plain_config = tiny((root / "plain").string());
  plain_config.variants = {"fp32"};
  plain_config.seeds = {1};
  auto outlier_config = plain_config;
  outlier_config.output = (root / "outliers").string();
  engines::set_gpt_outliers(outlier_config.train, "2:16");
  const auto plain = run(plain_config), outliers = run(outlier_config);
  EXPECT_EQ(outliers["gpt_outlier_rows"], 2);
  const auto widest = [](const nlohmann::json& json) {
    return json["variants"][0]["weights_range_over_bulk_sd"]["widest"].get<double>();
  };
  const auto median = [](const nlohmann::json& json) {
    return json["variants"][0]["weights_range_over_bulk_sd"]["median"].get<double>();
  };
  EXPECT_GT(median(outliers), 10 * median(plain));
  EXPECT_GT(widest(outliers), 10 * widest(plain));
  fs::remove_all(root);
}

TEST(QsdpExperiment, RanksWithOtherVariantsFailTogetherBeforeTraining) {
  const auto body = [](Communicator& comm) {
    auto config = tiny("");
    config.variants = comm.rank() == 0 ? std::vector<std::string>{"fp32"}
                                       : std::vector<std::string>{"W8G8"};
    run_qsdp_experiment(comm, config);
  };
  const std::string message = test::expect_throw_on_every_rank<MismatchError>(2, body);
  EXPECT_NE(message.find("--variants"), std::string::npos) << message;
}

TEST(QsdpExperiment, RefusesAnOutputThatCannotBeWritten) {
  const fs::path file =
      fs::temp_directory_path() / ("qccl-qsdp-file-" + std::to_string(::getpid()));
  write_file_atomically(file.string(), "not a directory");
  const auto body = [&](Communicator& comm) {
    run_qsdp_experiment(comm, tiny((file / "out").string()));
  };
  const std::string message = test::expect_throw_on_every_rank<InvalidArgument>(2, body);
  EXPECT_NE(message.find("choose another --output"), std::string::npos) << message;
  fs::remove(file);
}

}  // namespace
}  // namespace qccl::tools
