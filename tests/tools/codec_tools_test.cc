// The codec-facing tools: bench allreduce --codec, bench codec, simulate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../support/patterns.h"
#include "../support/world.h"
#include "bench_helpers.h"
#include "qccl/common/errors.h"
#include "qccl/tools/codec_bench.h"
#include "qccl/tools/collective_bench.h"
#include "qccl/tools/simulate.h"

namespace qccl::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;


// Every codec's results stay within its worst-case bound, and a compressed
// ring sends 2(n-1)/n of the compressed (not the fp32) bytes.
TEST(CodecAllreduceBenchTest, EveryCodecWithinItsBoundAndSendsCompressedBytes) {
  for (const std::string codec : {"fp32", "fp16", "global-qsgd", "global-qsgd:bits=4",
                                  "global-qsgd:dither=exp", "global-qsgd:norm=2", "qsgd",
                                  "qsgd:bits=4,norm=inf"}) {
    BenchConfig config;
    config.codec = codec;
    config.min_bytes = 4096;
    config.max_bytes = 65536;
    config.step_factor = 16;
    config.iterations = 3;
    config.warmup = 1;
    config.chunk_bytes = 8192;
    const auto rows = run_bench(4, config);
    ASSERT_EQ(rows.size(), 2u * 3u) << codec;
    for (const auto& r : rows) {
      EXPECT_EQ(r.wrong, 0u) << codec << " " << to_string(r.algorithm) << " " << r.bytes;
      if (codec == "global-qsgd" && r.algorithm == Algorithm::ring) {
        EXPECT_DOUBLE_EQ(*r.sent_bytes_per_rank, 1.5 * static_cast<double>(r.bytes) / 4) << r.bytes;
      }
    }
  }
}

TEST(CodecAllreduceBenchTest, CodecsOnlyWhereTheyHaveTheOperation) {
  BenchConfig config;
  config.operation = BenchOperation::broadcast;
  config.algorithms = {Algorithm::ring};
  config.codec = "fp16";
  EXPECT_THROW(validate(config), InvalidArgument);
  config.operation = BenchOperation::allgather;
  EXPECT_NO_THROW(validate(config));
  config.codec = "intdiana";
  EXPECT_THROW(validate(config), InvalidArgument);
  config.operation = BenchOperation::reduce_scatter;
  EXPECT_THROW(validate(config), InvalidArgument);  // IntDIANA: allreduce only
  config.operation = BenchOperation::allreduce;
  config.codec = "nope";
  EXPECT_THROW(validate(config), InvalidArgument);
}

TEST(CodecBenchTest, ReportsEveryCodec) {
  CodecBenchConfig config;
  config.codecs = {"fp32", "global-qsgd:bits=4", "global-qsgd:dither=exp"};
  config.bytes = 1 << 16;
  config.iterations = 2;
  const auto rows = run_codec_bench(config);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].spec, "global-qsgd:bits=4,dither=linear,norm=inf,sparse=off");
  EXPECT_EQ(rows[1].wire_bytes, (1u << 16) / 8);
  for (const auto& r : rows) {
    EXPECT_GT(r.memcpy_gbps, 0);
    EXPECT_GT(r.encode_gbps, 0);
    EXPECT_GT(r.decode_gbps, 0);
    EXPECT_GT(r.reduce_gbps, 0);
    EXPECT_GT(r.step_gbps, 0);
  }
}

// The vector is one matrix (128 × 128 here): PowerSGD's wire bytes are its
// rank-2 factors', and its whole step is timed; Top-k selects in it.
TEST(CodecBenchTest, TimesWholeStepsOverOneMatrix) {
  CodecBenchConfig config;
  config.codecs = {"powersgd", "topk:ef=off"};
  config.bytes = 1 << 16;
  config.iterations = 2;
  const auto rows = run_codec_bench(config);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].wire_bytes, 4u * 2 * (128 + 128));
  EXPECT_EQ(rows[1].wire_bytes, 4u + 8 * 164);  // ⌈0.01 · 16384⌉ pairs
  for (const auto& r : rows) EXPECT_GT(r.step_gbps, 0) << r.spec;
}

class SimulateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qccl_simulate_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::vector<float>& values) {
    const auto path = (dir_ / "input.f32").string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(values.size() * sizeof(float)));
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(SimulateTest, WritesEveryRoundAndSummarises) {
  constexpr int kRanks = 3, kRounds = 5;
  constexpr std::size_t kD = 100;
  std::vector<float> input;
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kD; ++i) input.push_back(test::noise(r, i));
  }
  SimulateConfig config{kRanks, "global-qsgd:dither=exp", write(input), 0,
                        (dir_ / "out.f32").string(), kRounds, 3, Algorithm::halving_doubling};
  const auto summary = run_simulation(config);
  EXPECT_EQ(summary.dimension, kD);
  EXPECT_EQ(std::filesystem::file_size(config.output), kRounds * kD * sizeof(float));
  EXPECT_GT(summary.mean_squared_error, 0);
  EXPECT_LT(summary.relative_squared_error, 1.0);
  EXPECT_LT(summary.bytes_sent_per_rank, summary.fp32_ring_bytes / 2);
  // Same seed, same results; the fp32 codec is exact up to rounding.
  const auto again = run_simulation(config);
  EXPECT_EQ(again.mean_squared_error, summary.mean_squared_error);
  config.codec = "fp32";
  EXPECT_LT(run_simulation(config).mean_squared_error, 1e-12);
}

TEST_F(SimulateTest, RejectsBadInputWithoutWritingOutput) {
  const auto path = write(std::vector<float>(10, 1.0f));  // 40 bytes: not a multiple of 4·3
  SimulateConfig config{3, "fp16", path, 0, (dir_ / "out.f32").string(), 1, 0, Algorithm::ring};
  EXPECT_THAT([&] { run_simulation(config); },
              ThrowsMessage<InvalidArgument>(HasSubstr("not a non-zero multiple of 4·ranks = 12")));
  EXPECT_FALSE(std::filesystem::exists(config.output));
  config.codec = "global-qsgd:bitz=8";
  EXPECT_THROW(run_simulation(config), InvalidArgument);
  config.codec = "fp16";
  config.input = (dir_ / "missing.f32").string();
  EXPECT_THROW(run_simulation(config), InvalidArgument);
}

TEST_F(SimulateTest, SyntheticInputIsReproducibleAndExclusiveWithAFile) {
  SimulateConfig config{4, "global-qsgd", "", 1000, (dir_ / "out.f32").string(), 3, 8, Algorithm::ring};
  const auto first = run_simulation(config);
  EXPECT_EQ(first.dimension, 1000u);
  EXPECT_EQ(run_simulation(config).squared_error_per_round, first.squared_error_per_round);
  ASSERT_TRUE(first.variance_bound.has_value());
  EXPECT_LT(first.squared_error_per_round, *first.variance_bound);
  config.input = write(std::vector<float>(4, 1.0f));
  EXPECT_THROW(run_simulation(config), InvalidArgument);
  config.input.clear();
  config.synthetic = 0;
  EXPECT_THROW(run_simulation(config), InvalidArgument);
}

TEST_F(SimulateTest, NonFiniteInputIsReported) {
  std::vector<float> input(6, 1.0f);
  input[4] = std::numeric_limits<float>::infinity();  // rank 2 of 3, d = 2
  SimulateConfig config{3, "global-qsgd", write(input), 0, (dir_ / "out.f32").string(), 1, 0,
                        Algorithm::ring};
  EXPECT_THAT([&] { run_simulation(config); }, ThrowsMessage<InvalidArgument>(HasSubstr("rank(s) 2")));
  EXPECT_FALSE(std::filesystem::exists(config.output));
}

}  // namespace
}  // namespace qccl::tools
