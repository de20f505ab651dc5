// `qccl experiment intsgd-logreg` on the in-process transport: the files and
// their documented columns, reproducibility, and the paper's claim on a
// small problem — IntDIANA's integers stay within 3 bits per coordinate
// while IntGD's keep growing (IntSGD Appendix A.2, Figure 6).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/intsgd_experiment.h"

namespace qccl::tools {
namespace {

using test::run_world;

LogregReport run(int ranks, const LogregConfig& config) {
  LogregReport report;
  run_world(ranks, [&](Communicator& comm) {
    auto mine = run_logreg_experiment(comm, config);
    if (comm.rank() == 0) report = std::move(mine);
  });
  return report;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(IntsgdExperimentTest, IntDianaStaysSmallWhileIntGdGrows) {
  LogregConfig config;
  config.data = "synthetic:600x20";
  config.passes = 300;
  config.output = (std::filesystem::temp_directory_path() / "qccl-intsgd-logreg-test").string();
  std::filesystem::remove_all(config.output);
  const auto report = run(4, config);
  ASSERT_EQ(report.methods.size(), 3u);
  EXPECT_LT(report.f_star_gradient_norm, 1e-12);
  const auto& intgd = report.methods[0];
  const auto& intdiana = report.methods[1];
  const auto& vr = report.methods[2];
  EXPECT_EQ(intgd.method, "intgd");
  // Both full-gradient methods converge linearly at the same step size.
  EXPECT_LT(intgd.final_gap, 1e-6);
  EXPECT_LT(intdiana.final_gap, 1e-6);
  EXPECT_LT(vr.final_gap, 1e-12);
  EXPECT_GE(intgd.grads_per_sample, 300);
  // The claim: IntDIANA within 3 bits (|q| <= 3), IntGD far beyond.
  EXPECT_LE(intdiana.largest_sent_late, 3u);
  EXPECT_LT(bits_for(intdiana.largest_sent_late), 3.0);
  EXPECT_LE(vr.largest_sent_late, 3u);
  EXPECT_GT(intgd.largest_sent_late, 100u);
  for (const auto& m : report.methods) EXPECT_EQ(m.clipped, 0u) << m.method;

  ASSERT_EQ(report.files.size(), 3u);
  const auto csv = lines_of(config.output + "/intsgd-logreg.csv");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0], "method,iteration,grads_per_sample,objective,objective_gap,largest_sent,"
                    "largest_sum,bits_sent,clipped");
  std::size_t expected_rows = 1;
  for (const auto& m : report.methods) expected_rows += m.iterations + 1;
  EXPECT_EQ(csv.size(), expected_rows);
  for (std::size_t i = 1; i < csv.size(); ++i) {
    EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), 8) << csv[i];
  }
  // IntGD's integers grow: the largest in its last rows beyond its first half's.
  std::uint64_t early = 0;
  for (std::size_t i = 1; i <= intgd.iterations / 2; ++i) {
    std::stringstream row(csv[i]);
    std::string field;
    for (int f = 0; f < 6; ++f) std::getline(row, field, ',');
    early = std::max<std::uint64_t>(early, std::stoull(field));
  }
  EXPECT_GT(intgd.largest_sent_late, 10 * early);
  const auto svg = lines_of(config.output + "/intsgd-logreg.svg");
  ASSERT_GT(svg.size(), 2u);
  EXPECT_THAT(svg[1], ::testing::HasSubstr("<svg"));
  std::ifstream json(config.output + "/intsgd-logreg.json");
  EXPECT_TRUE(json.good());
  std::filesystem::remove_all(config.output);
}

TEST(IntsgdExperimentTest, ReproducibleFromItsSeedAndTheRankCount) {
  LogregConfig config;
  config.data = "synthetic:300x10";
  config.passes = 20;
  config.methods = {"intsgd", "vr-intdiana"};
  config.wire = "int8";
  config.epsilon = 1e-8;
  const auto a = run(3, config), b = run(3, config);
  ASSERT_EQ(a.methods.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.methods[i].final_gap, b.methods[i].final_gap);
    EXPECT_EQ(a.methods[i].iterations, b.methods[i].iterations);
    EXPECT_EQ(a.methods[i].largest_sent, b.methods[i].largest_sent);
  }
  config.seed = 1;
  EXPECT_NE(run(3, config).methods[0].final_gap, a.methods[0].final_gap);
}

TEST(IntsgdExperimentTest, RejectsBadSettings) {
  // Each case changes one setting of a valid run on `ranks` ranks.
  const auto expect_invalid = [](const std::function<void(LogregConfig&)>& change,
                                 const std::string& message, int ranks = 2) {
    LogregConfig config;
    config.data = "synthetic:100x5";
    change(config);
    EXPECT_THAT([&] { run(ranks, config); },
                ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr(message)));
  };
  expect_invalid([](LogregConfig& c) { c.methods = {"intgd", "adam"}; }, "unknown method 'adam'");
  expect_invalid([](LogregConfig& c) { c.data = "mnist"; }, "unknown --data 'mnist'");
  expect_invalid([](LogregConfig& c) { c.data = "synthetic:100"; }, "synthetic:ROWSxFEATURES");
  expect_invalid([](LogregConfig& c) { c.wire = "int16"; }, "wire=int16 is not valid");
  expect_invalid([](LogregConfig& c) { c.data = "libsvm:/nonexistent.svm"; },
                 "cannot open LibSVM file");
  expect_invalid([](LogregConfig& c) { c.passes = 0; }, "--passes must be positive");
  expect_invalid([](LogregConfig& c) { c.data = "synthetic:3x5"; }, "fewer than the 4 ranks", 4);
}

}  // namespace
}  // namespace qccl::tools
