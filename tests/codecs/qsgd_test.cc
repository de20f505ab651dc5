// The QSGD baseline: unbiased end to end (allgather, decode, average), at 8
// and 4 bits, with buckets that do not divide the length.
#include <gtest/gtest.h>

#include "../support/patterns.h"
#include "../support/test_names.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

std::vector<float> input_of(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) { return noise(rank, i) * (1.0f + rank); });
}

class QsgdTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(QsgdTest, UnbiasedEndToEnd) {
  const auto& [spec, n] = GetParam();
  expect_unbiased_end_to_end(spec, n, Algorithm::ring, [](int r) { return input_of(r, 300); }, 2000);
}

INSTANTIATE_TEST_SUITE_P(SpecsRanks, QsgdTest,
                         ::testing::Combine(::testing::Values("qsgd:bucket=128", "qsgd:bits=4,bucket=128",
                                                              "qsgd:norm=inf,bucket=256"),
                                            ::testing::Values(2, 3, 4, 5, 8)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return test_name(std::get<0>(info.param) + "_n" +
                                            std::to_string(std::get<1>(info.param)));
                         });

TEST(QsgdCodecTest, NoInTransitReductionBecauseScalesDiffer) {
  auto codec = make_codec("qsgd");
  auto encoding = codec->encoding_for(1.0, 2, 0, Algorithm::ring);
  EXPECT_EQ(encoding->in_transit(), nullptr);
  EXPECT_EQ(codec->aggregation(), Aggregation::allgather_decode);
}

}  // namespace
}  // namespace qccl::test
