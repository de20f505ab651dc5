// Top-k: its spec, wire size and bound; exactly the k_t largest |x| of every
// tensor sent (against a brute-force sort, with ties) and the mean of the
// ranks' sparse vectors bit for bit; error feedback's residual carried into
// the next step and nothing lost over steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// x on the k_t largest |x| of each tensor (ties to the lower index), 0
// elsewhere, by a stable sort.
std::vector<float> brute_force_topk(std::span<const float> x, const TensorLayout& layout,
                                    double ratio) {
  std::vector<float> kept(x.size(), 0.0f);
  for (const TensorSlice& t : layout.tensors(x.size())) {
    std::vector<std::size_t> order(t.elements);
    std::iota(order.begin(), order.end(), t.offset);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return std::abs(x[a]) > std::abs(x[b]); });
    for (std::size_t i = 0; i < sparse_count(ratio, t.elements); ++i) kept[order[i]] = x[order[i]];
  }
  return kept;
}

// Small integers with many equal magnitudes, different on every rank and step.
std::vector<float> tied_input(int rank, int step, std::size_t d) {
  const auto shift = static_cast<std::size_t>(3 * step + 5 * rank);
  return make_vector(d, [&](std::size_t i) {
    return static_cast<float>((static_cast<long>((7 * i + shift) % 13) - 6) *
                              static_cast<long>(1 + (i + shift) % 3));
  });
}

TEST(TopkCodecTest, SpecIsCanonicalAndValidated) {
  EXPECT_EQ(make_codec("topk")->spec(), "topk:ratio=0.01,select=group,ef=on");
  EXPECT_EQ(make_codec("topk:ef=off,ratio=0.25")->spec(), "topk:ratio=0.25,select=group,ef=off");
  for (const char* spec : {"topk", "topk:ratio=0.001,ef=off", "topk:ratio=1"}) {
    const auto codec = make_codec(spec);
    EXPECT_EQ(make_codec(codec->spec())->spec(), codec->spec());
  }
  EXPECT_THROW(make_codec("topk:ratio=0"), InvalidArgument);
  EXPECT_THROW(make_codec("topk:ratio=1.5"), InvalidArgument);
  EXPECT_THROW(make_codec("topk:ratio=-0.1"), InvalidArgument);
  EXPECT_THROW(make_codec("topk:ratio=many"), InvalidArgument);
  EXPECT_THROW(make_codec("topk:ef=maybe"), InvalidArgument);
  EXPECT_THROW(make_codec("topk:k=10"), InvalidArgument);
}

TEST(TopkCodecTest, DeclaresBiasAggregationWireSizeAndBound) {
  const auto plain = make_codec("topk:ratio=0.01,ef=off");
  const auto memory = make_codec("topk:ratio=0.01,ef=on");
  for (const auto* codec : {plain.get(), memory.get()}) {
    EXPECT_FALSE(codec->unbiased());
    EXPECT_EQ(codec->aggregation(), Aggregation::allgather_decode);
    EXPECT_EQ(codec->wire_bytes(1000), 4u + 8 * 10);  // a count, 10 (index, value) pairs
    EXPECT_EQ(codec->wire_bytes(0), 4u);
    EXPECT_FALSE(codec->has_native_equivalent());
  }
  EXPECT_TRUE(plain->supports(CodecOperation::allgather));
  EXPECT_FALSE(memory->supports(CodecOperation::allgather));
  EXPECT_TRUE(memory->supports(CodecOperation::reduce_scatter_mean));
  EXPECT_NEAR(plain->max_abs_error(2.0, 4, Algorithm::ring), 2.0, 1e-5);
  EXPECT_GE(plain->max_abs_error(2.0, 4, Algorithm::ring), 2.0);
  EXPECT_TRUE(std::isinf(memory->max_abs_error(2.0, 4, Algorithm::ring)));
  // select=tensor, per tensor of the layout: ⌈0.01·50⌉ + ⌈0.01·950⌉ = 1 + 10
  // pairs; select=group (the default), the group as one tensor: 10.
  const std::vector<std::size_t> sizes{50, 950};
  plain->set_layout(TensorLayout::of_sizes(sizes));
  EXPECT_EQ(plain->wire_bytes(1000), 4u + 8 * 10);
  const auto per_tensor = make_codec("topk:ratio=0.01,select=tensor,ef=off");
  per_tensor->set_layout(TensorLayout::of_sizes(sizes));
  EXPECT_EQ(per_tensor->wire_bytes(1000), 4u + 8 * 11);
}

// select=tensor: every rank's own contribution is exactly its brute-force top-k per tensor,
// and the result is their fp32 sum in rank order divided by n, bit for bit.
TEST(TopkCodecTest, SendsExactlyTheLargestOfEveryTensorAndAveragesThem) {
  const std::vector<std::size_t> sizes{1, 37, 0, 500, 1200, 4};
  const auto layout = TensorLayout::of_sizes(sizes);
  const std::size_t d = layout.total();
  constexpr double kRatio = 0.03;
  for (int n : {1, 3, 4}) {
    std::vector<float> expected(d, 0.0f);
    for (int r = 0; r < n; ++r) {
      const auto kept = brute_force_topk(tied_input(r, 0, d), layout, kRatio);
      for (std::size_t i = 0; i < d; ++i) expected[i] = r == 0 ? kept[i] : expected[i] + kept[i];
    }
    for (float& x : expected) x /= static_cast<float>(n);
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
      run_world(n, [&](Communicator& comm) {
        auto codec = make_codec("topk:ratio=0.03,select=tensor,ef=off", {.seed = 1, .bucket = 0});
        codec->set_layout(layout);
        CollectiveOptions options;
        options.algorithm = algorithm;
        options.chunk_bytes = 256;  // tensors cut across chunks
        const auto input = tied_input(comm.rank(), 0, d);
        auto data = input;
        std::vector<float> own(d);
        codec->allreduce_mean(comm, data, options, own);
        EXPECT_EQ(own, brute_force_topk(input, layout, kRatio)) << "rank " << comm.rank();
        EXPECT_EQ(data, expected) << n << " ranks, " << to_string(algorithm);
      });
    }
  }
}

TEST(TopkCodecTest, AllgatherSendsEachShardsLargest) {
  constexpr std::size_t kShard = 300;
  run_world(3, [&](Communicator& comm) {
    auto codec = make_codec("topk:ratio=0.02,ef=off");
    const auto shard = tied_input(comm.rank(), 1, kShard);
    std::vector<float> gathered(3 * kShard);
    codec->allgather(comm, shard, gathered);
    for (int q = 0; q < 3; ++q) {
      const auto kept = brute_force_topk(tied_input(q, 1, kShard), TensorLayout(), 0.02);
      EXPECT_TRUE(std::equal(kept.begin(), kept.end(), gathered.begin() + q * kShard)) << q;
    }
  });
}

// Error feedback: step 2 compresses x₂ + (x₁ − Q(x₁)); and once the inputs
// stop, zero steps flush the residual, so the contributions add up to the
// inputs exactly (small integers: every fp32 sum is exact).
TEST(TopkCodecTest, ErrorFeedbackCarriesTheResidualAndLosesNothing) {
  constexpr std::size_t kD = 60;
  constexpr int kSteps = 4;
  const std::vector<std::size_t> sizes{20, 40};
  const auto layout = TensorLayout::of_sizes(sizes);
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("topk:ratio=0.1,select=tensor,ef=on");
    codec->set_layout(layout);
    std::vector<double> inputs(kD, 0.0), sent(kD, 0.0);
    std::vector<float> residual(kD, 0.0f);
    const int flush = static_cast<int>(kD);  // at least one element leaves the residual per step
    for (int step = 0; step < kSteps + flush; ++step) {
      auto data = step < kSteps ? tied_input(comm.rank(), step, kD) : std::vector<float>(kD, 0.0f);
      std::vector<float> pushed(kD), own(kD);
      for (std::size_t i = 0; i < kD; ++i) {
        inputs[i] += data[i];
        pushed[i] = data[i] + residual[i];
      }
      codec->allreduce_mean(comm, data, {}, own);
      ASSERT_EQ(own, brute_force_topk(pushed, layout, 0.1)) << "step " << step;
      for (std::size_t i = 0; i < kD; ++i) {
        residual[i] = pushed[i] - own[i];
        sent[i] += own[i];
      }
    }
    EXPECT_EQ(residual, std::vector<float>(kD, 0.0f)) << "the residual was not flushed";
    EXPECT_EQ(sent, inputs) << "sent + residual differs from the inputs' sum";
  });
}

}  // namespace
}  // namespace qccl::test
