// DGC: its spec; momentum correction, accumulation and factor masking on a
// hand-computed example (u, v and the result, exactly); the threshold's
// ×1.3 / ×0.7 adjustment and its fallback; the warm-up schedule, alone and
// in the counts a codec sends; local clipping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/sparsifiers/dgc_selection.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

TEST(DgcCodecTest, SpecIsCanonicalAndValidated) {
  EXPECT_EQ(make_codec("dgc")->spec(), "dgc:ratio=0.01,select=group,momentum=0.9,clip=off,warmup=0,sample=0.01");
  const auto codec = make_codec("dgc:clip=2.5,warmup=100,ratio=0.001,sample=0.1,momentum=0");
  EXPECT_EQ(codec->spec(), "dgc:ratio=0.001,select=group,momentum=0,clip=2.5,warmup=100,sample=0.1");
  EXPECT_EQ(make_codec(codec->spec())->spec(), codec->spec());
  EXPECT_EQ(make_codec("dgc:clip=off")->spec(), make_codec("dgc")->spec());
  for (const char* bad : {"dgc:ratio=0", "dgc:momentum=1", "dgc:clip=0", "dgc:clip=-1",
                          "dgc:clip=tight", "dgc:warmup=1.5", "dgc:warmup=-1", "dgc:sample=0",
                          "dgc:sample=2", "dgc:nesterov=on"}) {
    EXPECT_THROW(make_codec(bad), InvalidArgument) << bad;
  }
}

TEST(DgcCodecTest, DeclaresBiasAggregationWireSizeAndNoBound) {
  const auto codec = make_codec("dgc");
  EXPECT_FALSE(codec->unbiased());
  EXPECT_EQ(codec->aggregation(), Aggregation::allgather_decode);
  EXPECT_TRUE(codec->supports(CodecOperation::allreduce_mean));
  EXPECT_TRUE(codec->supports(CodecOperation::reduce_scatter_mean));
  EXPECT_FALSE(codec->supports(CodecOperation::allgather));
  EXPECT_TRUE(std::isinf(codec->max_abs_error(1.0, 2, Algorithm::ring)));
  EXPECT_EQ(codec->wire_bytes(1000), 4u + 8 * 13);  // at most ⌊1.3·10⌋ pairs
  EXPECT_THAT(codec_catalog(), ::testing::Contains(::testing::Pair(
                                   "dgc", ::testing::HasSubstr("WITHOUT momentum"))));
}

// Two ranks, one tensor of 4 elements, k = 1, m = 0.5, the exact threshold
// (sample=1); every value is exact in binary. Step 1: u = v = g, rank 0
// sends −4 (element 1), rank 1 sends 3 (element 0). Step 2, g = 1 on both:
//   rank 0: u = 0.5·(1, 0, 2, 0.5) + 1 = (1.5, 1, 2, 1.25),
//           v = (1, 0, 2, 0.5) + u = (2.5, 1, 4, 1.75): sends 4 (element 2);
//   rank 1: u = 0.5·(0, 1, −2, 0) + 1 = (1, 1.5, 0, 1),
//           v = (0, 1, −2, 0) + u = (1, 2.5, −2, 1): sends 2.5 (element 1);
// and both zero u and v where they sent.
TEST(DgcCodecTest, MomentumCorrectionAccumulationAndMaskingByHand) {
  const std::vector<std::string> names{"w"};
  const std::vector<std::vector<std::int64_t>> shapes{{4}};
  const auto layout = TensorLayout::of_shapes(names, shapes);
  const std::vector<std::vector<float>> g1{{1, -4, 2, 0.5f}, {3, 1, -2, 0}};
  const std::vector<std::vector<float>> u1{{1, 0, 2, 0.5f}, {0, 1, -2, 0}};
  const std::vector<std::vector<float>> u2{{1.5f, 1, 0, 1.25f}, {1, 0, 0, 1}};
  const std::vector<std::vector<float>> v2{{2.5f, 1, 0, 1.75f}, {1, 0, -2, 1}};
  run_world(2, [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    auto store = std::make_shared<TensorStateStore>();
    auto codec = make_codec("dgc:ratio=0.25,momentum=0.5,sample=1");
    codec->set_layout(layout, store);
    auto data = g1[r];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{1.5f, -2, 0, 0}));
    auto u = store->floats("w", "dgc.momentum", 4);
    auto v = store->floats("w", "dgc.accumulated", 4);
    EXPECT_EQ(std::vector<float>(u.begin(), u.end()), u1[r]);
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), u1[r]);  // v = u after one step
    data.assign(4, 1.0f);
    std::vector<float> own(4);
    codec->allreduce_mean(comm, data, {}, own);
    EXPECT_EQ(data, (std::vector<float>{0, 1.25f, 2, 0}));
    EXPECT_EQ(own, r == 0 ? (std::vector<float>{0, 0, 4, 0}) : (std::vector<float>{0, 2.5f, 0, 0}));
    EXPECT_EQ(std::vector<float>(u.begin(), u.end()), u2[r]);
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), v2[r]);
  });
}

// |v| = 1, 2, ..., 100 and a target of k = 20: the count must end in
// [14, 26].
std::vector<float> one_to_hundred() {
  std::vector<float> v(100);
  std::iota(v.begin(), v.end(), 1.0f);
  for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
  return v;
}

TEST(DgcCodecTest, ThresholdIsRaisedOrLoweredUntilTheCountFits) {
  const auto v = one_to_hundred();
  // τ = 61 counts 40 > 26: raised to 79.3, which counts 80..100 = 21.
  auto outcome = adjust_threshold(v, 61, 20);
  EXPECT_EQ(outcome.adjustments, 1);
  EXPECT_DOUBLE_EQ(outcome.threshold, 61 * 1.3);
  EXPECT_EQ(outcome.count, 21u);
  // τ = 95 counts 6 < 14: lowered to 66.5 (34 > 26), raised to 86.45: 14.
  outcome = adjust_threshold(v, 95, 20);
  EXPECT_EQ(outcome.adjustments, 2);
  EXPECT_DOUBLE_EQ(outcome.threshold, 95 * 0.7 * 1.3);
  EXPECT_EQ(outcome.count, 14u);
  // τ = 81 counts 20: left as it is.
  outcome = adjust_threshold(v, 81, 20);
  EXPECT_EQ(outcome.adjustments, 0);
  EXPECT_EQ(outcome.count, 20u);
}

TEST(DgcCodecTest, SelectionFallsBackToTheExactLargestWhenTheThresholdCannotFit) {
  std::vector<float> scratch;
  std::vector<std::uint32_t> magnitudes;
  const CounterRng rng(1, 0, 0, 0, RngStream::sparsify);
  // 50 ones and 50 thousands, k = 20: every threshold counts 0 or 50, so the
  // rounds run out; the 20 largest (the first 20 thousands) are sent.
  std::vector<float> gap(100, 1.0f);
  for (std::size_t i = 50; i < 100; ++i) gap[i] = 1000.0f;
  EXPECT_EQ(adjust_threshold(gap, 1000, 20).adjustments, kDgcMaxAdjustments);
  std::vector<std::size_t> selected;
  select_by_threshold(gap, 20, 1.0, rng, 0, selected, scratch, magnitudes);
  std::vector<std::size_t> expected(20);
  std::iota(expected.begin(), expected.end(), 50);
  EXPECT_EQ(selected, expected);
  // 5 non-zeros and k = 10: the estimate is 0; the 10 largest are the five
  // (3, 17, 40, 41, 99) and the first five zeros (0, 1, 2, 4, 5).
  std::vector<float> sparse(100, 0.0f);
  for (std::size_t i : {3, 17, 40, 41, 99}) sparse[i] = static_cast<float>(i);
  selected.clear();
  select_by_threshold(sparse, 10, 1.0, rng, 1000, selected, scratch, magnitudes);
  EXPECT_EQ(selected, (std::vector<std::size_t>{1000, 1001, 1002, 1003, 1004, 1005, 1017, 1040,
                                                1041, 1099}));
  // A well-spread tensor and a 1% sample: the count lands in [0.7·k, 1.3·k].
  const auto spread = make_vector(100000, [](std::size_t i) { return noise(3, i); });
  selected.clear();
  select_by_threshold(spread, 1000, 0.01, rng, 0, selected, scratch, magnitudes);
  EXPECT_GE(selected.size(), 700u);
  EXPECT_LE(selected.size(), 1300u);
  EXPECT_TRUE(std::is_sorted(selected.begin(), selected.end()));
}

TEST(DgcCodecTest, SampleSizeKeepsEightOfTheTargetInTheSample) {
  EXPECT_EQ(dgc_sample_size(100000, 1000, 0.01), 1000u);  // ⌈0.01·d⌉ = 8·d/k·1.25
  EXPECT_EQ(dgc_sample_size(100000, 100, 0.01), 8000u);   // ⌈8·d/k⌉
  EXPECT_EQ(dgc_sample_size(1000, 10, 0.01), 800u);
  EXPECT_EQ(dgc_sample_size(100, 1, 0.01), 100u);  // at most d
  EXPECT_EQ(dgc_sample_size(0, 0, 0.01), 0u);
  EXPECT_EQ(dgc_max_selected(1), 1u);
  EXPECT_EQ(dgc_max_selected(10), 13u);
  EXPECT_EQ(dgc_max_selected(100), 130u);
}

TEST(DgcCodecTest, WarmupRaisesTheSparsityExponentially) {
  // The paper's schedule: 75%, 93.75%, 98.4375%, 99.6%, then 99.9%.
  const std::vector<std::pair<std::uint64_t, double>> schedule{
      {0, 0.25},          {99, 0.25},         {100, 0.0625},     {199, 0.0625},
      {200, 0.015625},    {300, 0.00390625},  {399, 0.00390625}, {400, 0.001},
      {100000, 0.001}};
  for (const auto& [step, density] : schedule) {
    EXPECT_EQ(dgc_density(0.001, 400, step), density) << "step " << step;
  }
  EXPECT_EQ(dgc_density(0.01, 0, 0), 0.01);    // no warm-up
  EXPECT_EQ(dgc_density(0.3, 100, 5), 0.3);    // no power of 1/4 above the ratio
  EXPECT_EQ(dgc_density(0.01, 4, 1), 0.25);    // 3 stages over 4 steps: 0, 0, 1, 2
  EXPECT_EQ(dgc_density(0.01, 4, 2), 0.0625);
  EXPECT_EQ(dgc_density(0.01, 4, 3), 0.015625);
  EXPECT_EQ(dgc_density(0.01, 1, 0), 0.25);
}

// The exact threshold (sample=1) on continuous values sends exactly k per
// step: 250, 250, 63, 16, then 10 of 1000 elements; wire_bytes follows.
TEST(DgcCodecTest, WarmupSetsHowManyEachStepSends) {
  constexpr std::size_t kD = 1000;
  auto codec = make_codec("dgc:ratio=0.01,momentum=0.9,warmup=4,sample=1");
  run_world(1, [&](Communicator& comm) {
    for (std::size_t expected : {250, 250, 63, 16, 10, 10}) {
      EXPECT_EQ(codec->wire_bytes(kD), 4 + 8 * dgc_max_selected(expected));
      auto data = make_vector(kD, [&](std::size_t i) { return noise(static_cast<int>(codec->step()), i); });
      std::vector<float> own(kD);
      codec->allreduce_mean(comm, data, {}, own);
      const auto sent = static_cast<std::size_t>(
          std::count_if(own.begin(), own.end(), [](float x) { return x != 0.0f; }));
      EXPECT_EQ(sent, expected) << "step " << codec->step() - 1;
    }
  });
}

// Clipping at C scales each rank's tensor to norm C/√n: with n = 4 and
// C = 4, a gradient of norm 8 becomes norm 2; one of norm 1 is left alone.
TEST(DgcCodecTest, LocalClippingScalesTheGradientToTheThresholdOverRootN) {
  for (float size : {8.0f, 1.0f}) {
    run_world(4, [&](Communicator& comm) {
      auto codec = make_codec("dgc:ratio=0.25,momentum=0,clip=4,sample=1");
      std::vector<float> data{0, size, 0, 0};
      codec->allreduce_mean(comm, data);
      EXPECT_EQ(data, (std::vector<float>{0, std::min(size, 2.0f), 0, 0}));
    });
  }
}

}  // namespace
}  // namespace qccl::test
