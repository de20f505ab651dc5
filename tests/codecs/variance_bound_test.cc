// Each codec's published variance bound (variance_bound) holds: the mean
// squared error over rounds stays below it, within 5 standard errors.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"

namespace qccl::test {
namespace {

using Param = std::tuple<std::string, int, Algorithm>;
class VarianceBoundTest : public ::testing::TestWithParam<Param> {};

TEST_P(VarianceBoundTest, MeasuredErrorWithinThePublishedBound) {
  const auto& [spec, n, algorithm] = GetParam();
  constexpr std::size_t kD = 4096;
  constexpr int kRounds = 40;
  auto input = [&](int r) {
    return make_vector(kD, [&](std::size_t i) { return noise(r, i) * (1.0f + 0.25f * r); });
  };
  const auto [squared_norm, mean] = rank_inputs(n, kD, input);
  const auto bound = make_codec(spec)->variance_bound(squared_norm, kD, n, algorithm);
  ASSERT_TRUE(bound.has_value()) << spec;
  const SampleMean error = sample_mean(squared_errors(
      collect_rounds(spec, n, algorithm, input, kRounds, std::size_t{1} << 20, {.seed = 12, .bucket = 0}),
      mean));
  EXPECT_LE(error.mean, *bound + 5 * error.standard_error) << spec;
  EXPECT_GT(error.mean, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, VarianceBoundTest,
    ::testing::Values(Param{"global-qsgd", 2, Algorithm::ring}, Param{"global-qsgd", 4, Algorithm::halving_doubling},
                      Param{"global-qsgd:norm=2", 8, Algorithm::ring},
                      Param{"global-qsgd:dither=exp", 4, Algorithm::ring},
                      Param{"global-qsgd:dither=exp", 5, Algorithm::halving_doubling},
                      Param{"qsgd", 3, Algorithm::ring}, Param{"qsgd:bits=4", 4, Algorithm::ring},
                      Param{"qgenx:bits=4,norm=2,bucket=0", 3, Algorithm::ring},
                      Param{"qgenx:bits=4,levels=exp,norm=2", 4, Algorithm::halving_doubling},
                      Param{"minmax:bits=4,bucket=256,rounding=shift", 3, Algorithm::ring},
                      Param{"minmax:bits=4,bucket=256", 2, Algorithm::ring}),
    [](const ::testing::TestParamInfo<Param>& info) {
      return test_name(std::get<0>(info.param) + "_n" + std::to_string(std::get<1>(info.param)) +
                       "_" + test_name(std::string(to_string(std::get<2>(info.param)))));
    });

TEST(VarianceBoundTest, NoBoundWhereThePapersGiveNone) {
  EXPECT_FALSE(make_codec("fp16")->variance_bound(1, 100, 2, Algorithm::ring));
  EXPECT_FALSE(make_codec("global-qsgd:bits=4")->variance_bound(1, 100, 2, Algorithm::ring));
  EXPECT_FALSE(make_codec("qsgd:norm=inf")->variance_bound(1, 100, 2, Algorithm::ring));
}

}  // namespace
}  // namespace qccl::test
