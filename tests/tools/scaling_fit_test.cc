// `qccl model --scaling`: a scripts/bench-scaling folder written here in the
// bench's JSON schema, with times from the host-link model, from which the
// fit recovers the coefficients and predicts every other point exactly; and
// the report's table, plot and model file, read back by --algo-model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/common/errors.h"
#include "qccl/tools/host_links_file.h"
#include "qccl/tools/scaling_fit.h"
#include "qccl/tools/scaling_report.h"
#include "qccl/tools/suite_fit.h"

namespace qccl::tools {
namespace {

const HostLinkParams kLinks{300e-6, 11e6, 20e-6, 1.5e9};
const CodecCost kFp32{1, 14e9, 0};
const CodecCost kQsgd{4, 40e9, 1 / 7.6e9 + 1 / 19.3e9};
constexpr double kRate = 100e6;

class ScalingFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qccl-scaling-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "codec.json") << nlohmann::json{
        {"bytes", 1 << 20},
        {"rows",
         {{{"codec", "fp32"}, {"encode_gbps", 8.0}, {"decode_gbps", 10.0}, {"reduce_gbps", 14.0},
           {"memcpy_gbps", 10.0}, {"wire_bytes", 1 << 20}},
          {{"codec", "global-qsgd:bits=8"}, {"encode_gbps", 7.6}, {"decode_gbps", 19.3},
           {"reduce_gbps", 40.0}, {"memcpy_gbps", 10.0}, {"wire_bytes", 1 << 18}}}}}
                                                  .dump();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // One run of H hosts of L ranks, its times from the model.
  void write_run(HostShape shape, const nlohmann::json& codec, const CodecCost& cost,
                 const std::vector<Algorithm>& algorithms) {
    const double rate = shape.hosts > 1 ? kRate : 0;
    nlohmann::json j{{"operation", "allreduce"}, {"codec", codec}, {"ranks", shape.ranks()},
                     {"link_rate_bps", rate > 0 ? nlohmann::json(rate) : nlohmann::json()},
                     {"rows", nlohmann::json::array()}};
    for (double bytes = 256 * 1024; bytes <= 4 << 20; bytes *= 4) {
      for (Algorithm a : algorithms) {
        auto terms = host_link_terms(a, shape, bytes, cost.ratio);
        terms.card_bytes = shaped_wire_bytes(terms.card_bytes, rate);
        const double seconds = predict_host_link_seconds(terms, kLinks, cost);
        j["rows"].push_back({{"bytes", bytes}, {"algorithm", to_string(a)},
                             {"median_us", seconds * 1e6}, {"sent_bytes_per_rank", 1.0},
                             {"vs_native", nullptr}, {"wire_fraction", nullptr}, {"wrong", 0}});
      }
    }
    const std::string name = "allreduce-h" + std::to_string(shape.hosts) + "x" +
                             std::to_string(shape.ranks_per_host) + "-" +
                             (codec.is_null() ? "fp32" : "global-qsgd") + "-r1.json";
    std::ofstream(dir_ / name) << j.dump();
  }

  std::filesystem::path dir_;
};

TEST_F(ScalingFolderTest, FitRecoversTheCoefficientsAndPredictsEveryPoint) {
  write_run({1, 2}, nullptr, kFp32, {Algorithm::hierarchical, Algorithm::ring});
  write_run({4, 1}, nullptr, kFp32, {Algorithm::ring, Algorithm::halving_doubling});
  write_run({3, 2}, nullptr, kFp32,
            {Algorithm::ring, Algorithm::halving_doubling, Algorithm::hierarchical});
  write_run({2, 2}, "global-qsgd", kQsgd,
            {Algorithm::ring, Algorithm::halving_doubling, Algorithm::hierarchical});
  const auto fit = fit_scaling(load_suite(dir_.string()), 4);
  EXPECT_NEAR(fit.links.network_alpha, kLinks.network_alpha, 1e-6 * kLinks.network_alpha);
  EXPECT_NEAR(fit.links.network_beta, kLinks.network_beta, 1e-6 * kLinks.network_beta);
  EXPECT_NEAR(fit.links.local_alpha, kLinks.local_alpha, 1e-6 * kLinks.local_alpha);
  EXPECT_NEAR(fit.links.local_beta, kLinks.local_beta, 1e-6 * kLinks.local_beta);
  EXPECT_EQ(fit.link_rate_bps, kRate);
  ASSERT_EQ(fit.points.size(), 3u * (2 + 2 + 3 + 3));
  int fitted = 0;
  for (const auto& p : fit.points) {
    EXPECT_NEAR(p.predicted, p.measured, 1e-6 * p.measured);
    fitted += p.fitted;
  }
  EXPECT_EQ(fitted, 6);  // one host's hierarchical and 4 hosts' ring, 3 sizes each
  EXPECT_LT(fit.median_error, 1e-6);
}

TEST_F(ScalingFolderTest, ReportWritesTablePlotAndAModelFileThatReadsBack) {
  write_run({1, 2}, nullptr, kFp32, {Algorithm::hierarchical});
  write_run({4, 1}, nullptr, kFp32, {Algorithm::ring});
  write_run({2, 2}, "global-qsgd", kQsgd, {Algorithm::ring, Algorithm::hierarchical});
  ScalingConfig config;
  config.results = dir_.string();
  config.output = (dir_ / "model.json").string();
  config.plot = (dir_ / "scaling.svg").string();
  config.workloads = {parse_workload("cnn=80202:3.5")};
  config.link_rates_bps = {1e9, 100e9};
  std::ostringstream out;
  run_scaling_command(config, out);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("median |error|"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("128x8"));  // 1,024 ranks in hosts of 8
  EXPECT_TRUE(std::filesystem::exists(config.plot));
  const auto links = read_host_links(config.output);
  EXPECT_NEAR(links.network_beta, kLinks.network_beta, 1e-6 * kLinks.network_beta);
  EXPECT_NEAR(links.local_alpha, kLinks.local_alpha, 1e-6 * kLinks.local_alpha);
}

TEST_F(ScalingFolderTest, RefusesWhatItCannotFit) {
  write_run({2, 2}, nullptr, kFp32, {Algorithm::ring});
  EXPECT_THAT([&] { fit_scaling(load_suite(dir_.string()), 4); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("allreduce-h4x1")));
  EXPECT_THROW(parse_workload("cnn"), InvalidArgument);
  EXPECT_THROW(parse_workload("cnn=-3"), InvalidArgument);
  EXPECT_EQ(parse_workload("gpt=3205120").compute_ms, 0);
  std::ofstream(dir_ / "bad-model.json") << R"({"host_links": {"network_alpha_s": 0}})";
  EXPECT_THAT([&] { read_host_links((dir_ / "bad-model.json").string()); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("qccl model --scaling")));
}

}  // namespace
}  // namespace qccl::tools
