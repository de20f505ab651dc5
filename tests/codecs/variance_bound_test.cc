// Each codec's published variance bound (variance_bound) holds: the mean
// squared error over rounds stays below it, within 5 standard errors.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/codec_spec.h"

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
  double squared_norm = 0;
  std::vector<double> mean(kD, 0.0);
  for (int r = 0; r < n; ++r) {
    const auto x = input(r);
    for (std::size_t i = 0; i < kD; ++i) {
      squared_norm += static_cast<double>(x[i]) * x[i];
      mean[i] += x[i] / static_cast<double>(n);
    }
  }
  const auto bound = make_codec(spec)->variance_bound(squared_norm, kD, n, algorithm);
  ASSERT_TRUE(bound.has_value()) << spec;
  std::vector<double> error(kRounds, 0.0);
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 12});
    CollectiveOptions options;
    options.algorithm = algorithm;
    const auto x = input(comm.rank());
    for (int round = 0; round < kRounds; ++round) {
      auto data = x;
      codec->allreduce_mean(comm, data, options);
      if (comm.rank() != 0) continue;
      for (std::size_t i = 0; i < kD; ++i) error[static_cast<std::size_t>(round)] += (data[i] - mean[i]) * (data[i] - mean[i]);
    }
  });
  double average = 0, m2 = 0;
  for (double e : error) average += e / kRounds;
  for (double e : error) m2 += (e - average) * (e - average) / (kRounds - 1);
  EXPECT_LE(average, *bound + 5 * std::sqrt(m2 / kRounds)) << spec;
  EXPECT_GT(average, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, VarianceBoundTest,
    ::testing::Values(Param{"global-qsgd", 2, Algorithm::ring}, Param{"global-qsgd", 4, Algorithm::tree},
                      Param{"global-qsgd:norm=2", 8, Algorithm::ring},
                      Param{"global-qsgd:dither=exp", 4, Algorithm::ring},
                      Param{"global-qsgd:dither=exp", 5, Algorithm::tree},
                      Param{"qsgd", 3, Algorithm::ring}, Param{"qsgd:bits=4", 4, Algorithm::ring}),
    [](const ::testing::TestParamInfo<Param>& info) {
      std::string name = std::get<0>(info.param) + "_n" + std::to_string(std::get<1>(info.param)) +
                         "_" + std::string(to_string(std::get<2>(info.param)));
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(VarianceBoundTest, NoBoundWhereThePapersGiveNone) {
  EXPECT_FALSE(make_codec("fp16")->variance_bound(1, 100, 2, Algorithm::ring));
  EXPECT_FALSE(make_codec("global-qsgd:bits=4")->variance_bound(1, 100, 2, Algorithm::ring));
  EXPECT_FALSE(make_codec("qsgd:norm=inf")->variance_bound(1, 100, 2, Algorithm::ring));
}

}  // namespace
}  // namespace qccl::test
