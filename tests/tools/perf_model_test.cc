// The performance model (Global-QSGD §7): its terms in closed form, the fit
// recovering known α and β from synthetic measurements (exactly without
// noise, within the noise with it), Eq. (10), and the suite pipeline from
// JSON files to fits and report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "qccl/common/errors.h"
#include "qccl/tools/suite_fit.h"
#include "qccl/tools/suite_data.h"
#include "qccl/tools/suite_report.h"

namespace qccl::tools {
namespace {

const ModelParams kTruth{50e-6, 100e6, 10e9, 0.2e-9};

TEST(PerfModelTest, TermsInClosedForm) {
  const auto ring = model_terms(Algorithm::ring, 4, 1000, 4);
  EXPECT_EQ(ring.steps, 6);
  EXPECT_DOUBLE_EQ(ring.wire_bytes, 2.0 * 3 / 4 * 1000 / 4);
  EXPECT_DOUBLE_EQ(ring.reduce_bytes, 750);
  EXPECT_EQ(ring.codec_bytes, 1000);
  const auto tree = model_terms(Algorithm::halving_doubling, 5, 1000, 1);
  EXPECT_EQ(tree.steps, 6);  // 2⌈log2 5⌉
  EXPECT_DOUBLE_EQ(tree.wire_bytes, 2.0 * 4 / 5 * 1000);
  EXPECT_DOUBLE_EQ(predict_seconds(ring, kTruth),
                   6 * 50e-6 + 375 / 100e6 + 750 / 10e9 + 1000 * 0.2e-9);
  EXPECT_DOUBLE_EQ(shaped_wire_bytes(1e6, 0), 1e6);
  EXPECT_DOUBLE_EQ(shaped_wire_bytes(1e6, 1e9), 1e6 - 1e9 / 8 * kTbfBucketSeconds);
  EXPECT_EQ(shaped_wire_bytes(1e3, 1e9), 0.0);
}

std::vector<ModelSample> synthetic(const ModelParams& truth, double noise) {
  std::vector<ModelSample> samples;
  int k = 0;
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
    for (int n : {2, 4, 8}) {
      for (double bytes = 1024; bytes <= 256.0 * 1024 * 1024; bytes *= 4) {
        const auto terms = model_terms(algorithm, n, bytes, 4);
        // A fixed ±noise pattern: reproducible, and unbiased over the samples.
        const double factor = 1 + noise * ((k++ % 3) - 1);
        samples.push_back({terms, predict_seconds(terms, truth) * factor});
      }
    }
  }
  return samples;
}

TEST(PerfModelTest, FitRecoversKnownParameters) {
  const auto samples = synthetic(kTruth, 0);
  const auto fit = fit_alpha_beta(samples, kTruth.gamma, kTruth.delta);
  EXPECT_NEAR(fit.alpha, kTruth.alpha, 1e-9 * kTruth.alpha);
  EXPECT_NEAR(fit.beta, kTruth.beta, 1e-9 * kTruth.beta);
  const auto error = fit_error(samples, fit);
  EXPECT_LT(error.max, 1e-9);
  // With ±2% noise the parameters stay within a few percent.
  const auto noisy = synthetic(kTruth, 0.02);
  const auto rough = fit_alpha_beta(noisy, kTruth.gamma, kTruth.delta);
  EXPECT_NEAR(rough.alpha, kTruth.alpha, 0.05 * kTruth.alpha);
  EXPECT_NEAR(rough.beta, kTruth.beta, 0.05 * kTruth.beta);
  EXPECT_NEAR(fit_error(noisy, rough).median, 0.02, 0.01);
}

TEST(PerfModelTest, LatencyIsNeverNegativeAndBadDataIsRejected) {
  ModelParams no_latency = kTruth;
  no_latency.alpha = 0;
  std::vector<ModelSample> samples;
  for (const auto& s : synthetic(no_latency, 0)) {
    if (s.seconds > 1e-3) samples.push_back({s.terms, s.seconds - 1e-6});  // a negative α fits best
  }
  const auto fit = fit_alpha_beta(samples, kTruth.gamma, kTruth.delta);
  EXPECT_EQ(fit.alpha, 0.0);
  EXPECT_NEAR(fit.beta, kTruth.beta, 0.01 * kTruth.beta);
  EXPECT_THROW(fit_alpha_beta({samples[0]}, 0, 0), InvalidArgument);
  std::vector<ModelSample> shrinking{{model_terms(Algorithm::ring, 4, 1e3, 1), 1.0},
                                     {model_terms(Algorithm::ring, 4, 1e6, 1), 0.001}};
  EXPECT_THROW(fit_alpha_beta(shrinking, 0, 0), InvalidArgument);
}

// Eq. (10) with ρ = 4: the paper's exponential dithering (ω = 79) speeds up
// iff β < 6γ/75 = 0.08γ; ω = 1 (linear dithering) always does.
TEST(PerfModelTest, SpeedupConditionIsEquation10) {
  const double gamma = 2e12;
  const auto exponential = speedup_condition(4, gamma, 4 * gamma / 79, 53.9e9);
  EXPECT_NEAR(exponential.omega, 79, 1e-9);
  ASSERT_TRUE(exponential.max_beta.has_value());
  EXPECT_NEAR(*exponential.max_beta, 0.08 * gamma, 1e-6 * gamma);
  EXPECT_TRUE(exponential.holds);  // 53.9 GB/s < 160 GB/s, as §7 finds for P2P
  EXPECT_FALSE(speedup_condition(4, gamma, 4 * gamma / 79, 200e9).holds);
  const auto linear = speedup_condition(4, gamma, 4 * gamma, 1e15);
  EXPECT_NEAR(linear.omega, 1, 1e-12);
  EXPECT_FALSE(linear.max_beta.has_value());
  EXPECT_TRUE(linear.holds);
}

// A suite folder written here in the bench's JSON schema, with times from
// the model: the fits recover the link, and the report shows the speed-ups.
class SuiteFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qccl-suite-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const nlohmann::json& j) {
    std::ofstream(dir_ / name) << j.dump(2);
  }

  // One run: ring with `codec` (ratio ρ) and MPI fp32 native, 4 hosts, 1 Gbit/s.
  void write_run(const std::string& name, const nlohmann::json& codec, double ratio,
                 const ModelParams& params) {
    nlohmann::json j{{"operation", "allreduce"}, {"codec", codec}, {"ranks", 4},
                     {"link_rate_bps", 1e9}, {"rows", nlohmann::json::array()}};
    for (double bytes = 1024; bytes <= 64.0 * 1024 * 1024; bytes *= 4) {
      const double sent = 1.5 * bytes / ratio;
      const double ring = predict_seconds(
          model_terms_measured(Algorithm::ring, 4, bytes, shaped_wire_bytes(sent, 1e9)), params);
      ModelParams mpi = params;
      mpi.gamma = 0;
      mpi.delta = 0;
      const double native = predict_seconds(
          model_terms_measured(Algorithm::ring, 4, bytes, shaped_wire_bytes(1.5 * bytes, 1e9)), mpi);
      j["rows"].push_back({{"bytes", bytes}, {"algorithm", "ring"}, {"median_us", ring * 1e6},
                           {"sent_bytes_per_rank", sent}, {"vs_native", native / ring},
                           {"wire_fraction", sent * 8 / 1e9 / ring}, {"wrong", 0}});
      j["rows"].push_back({{"bytes", bytes}, {"algorithm", "native"}, {"median_us", native * 1e6},
                           {"sent_bytes_per_rank", nullptr}, {"vs_native", 1.0},
                           {"wire_fraction", 1.5 * bytes * 8 / 1e9 / native}, {"wrong", 0}});
    }
    write(name, j);
  }

  std::filesystem::path dir_;
};

TEST_F(SuiteFolderTest, FitsRecoverTheLinkAndTheReportShowsSpeedups) {
  const ModelParams link{40e-6, 110e6, 0, 0};
  ModelParams fp32 = link, qsgd = link;
  fp32.gamma = 14e9;
  qsgd.gamma = 40e9;
  qsgd.delta = 1 / 7.6e9 + 1 / 19.3e9;
  write_run("allreduce-h4-1gbit-fp32.json", nullptr, 1, fp32);
  write_run("allreduce-h4-1gbit-global-qsgd.json", "global-qsgd", 4, qsgd);
  write("codec.json",
        {{"bytes", 1 << 20},
         {"rows",
          {{{"codec", "fp32"}, {"encode_gbps", 8.0}, {"decode_gbps", 10.0}, {"reduce_gbps", 14.0},
            {"memcpy_gbps", 10.0}, {"wire_bytes", 1 << 20}},
           {{"codec", "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off"},
            {"encode_gbps", 7.6}, {"decode_gbps", 19.3}, {"reduce_gbps", 40.0},
            {"memcpy_gbps", 10.0}, {"wire_bytes", 1 << 18}}}}});
  const auto data = load_suite(dir_.string());
  EXPECT_EQ(data.files.size(), 3u);
  const auto fits = fit_suite(data);
  ASSERT_EQ(fits.size(), 3u);  // MPI fp32 (once), fp32 ring, global-qsgd ring
  for (const auto& f : fits) {
    EXPECT_NEAR(f.params.alpha, link.alpha, 1e-6 * link.alpha) << f.series;
    EXPECT_NEAR(f.params.beta, link.beta, 1e-6 * link.beta) << f.series;
    EXPECT_LT(f.error.max, 1e-6) << f.series;
  }
  const auto files = write_suite_report(data, dir_.string());
  ASSERT_GE(files.size(), 4u);
  std::ifstream md(dir_ / "results.md");
  const std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_THAT(text, ::testing::HasSubstr("| global-qsgd ring |"));
  EXPECT_THAT(text, ::testing::HasSubstr("4 hosts, 1 Gbit/s"));
  EXPECT_THAT(text, ::testing::HasSubstr("## 64 MiB allreduce"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "speedup-h4.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "time-h4-1Gbitps.svg"));
}

TEST_F(SuiteFolderTest, RejectsMissingAndMalformedResults) {
  EXPECT_THAT([&] { load_suite(dir_.string()); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("run scripts/bench-suite")));
  std::ofstream(dir_ / "allreduce-bad.json") << "{ not json";
  EXPECT_THAT([&] { load_suite(dir_.string()); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("allreduce-bad.json")));
  EXPECT_THROW(load_suite((dir_ / "missing").string()), InvalidArgument);
}

}  // namespace
}  // namespace qccl::tools
