// Rand-k: its spec and the refused combination; the same k_t positions of
// every tensor (select=tensor) or k of the whole group (select=group, the
// default; each tensor's share hypergeometric at 5σ) on every rank with
// only values on the wire (the encoding's size, and the bytes the ring
// sends); the scaled variant unbiased at 5σ,
// its mean squared error equal to (d/k − 1)·||x̄||² (positions shared by the
// ranks, so no 1/n) and within variance_bound; corrupt chunks refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// Never zero, so a kept position always shows in the own contribution.
std::vector<float> dense_input(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) { return 2.0f + noise(rank, i); });
}

TEST(RandkCodecTest, SpecIsCanonicalAndRefusesScaledErrorFeedback) {
  EXPECT_EQ(make_codec("randk")->spec(), "randk:ratio=0.01,select=group,scale=none,ef=on");
  EXPECT_EQ(make_codec("randk:scale=unbiased")->spec(),
            "randk:ratio=0.01,select=group,scale=unbiased,ef=off");
  EXPECT_EQ(make_codec("randk:ef=off,ratio=0.5,select=tensor")->spec(),
            "randk:ratio=0.5,select=tensor,scale=none,ef=off");
  for (const char* spec : {"randk", "randk:scale=unbiased,ratio=0.1", "randk:ef=off",
                           "randk:select=tensor"}) {
    const auto codec = make_codec(spec);
    EXPECT_EQ(make_codec(codec->spec())->spec(), codec->spec());
  }
  try {
    make_codec("randk:scale=unbiased,ef=on");
    ADD_FAILURE() << "scaled Rand-k with error feedback was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("scale=unbiased with ef=on"));
  }
  EXPECT_THROW(make_codec("randk:ratio=0"), InvalidArgument);
  EXPECT_THROW(make_codec("randk:scale=half"), InvalidArgument);
  EXPECT_THROW(make_codec("randk:select=layer"), InvalidArgument);
}

TEST(RandkCodecTest, DeclaresBiasAggregationWireSizeAndBounds) {
  const auto unbiased = make_codec("randk:ratio=0.01,scale=unbiased,ef=off");
  const auto plain = make_codec("randk:ratio=0.01,scale=none,ef=off");
  const auto memory = make_codec("randk");
  EXPECT_TRUE(unbiased->unbiased());
  EXPECT_FALSE(plain->unbiased());
  EXPECT_FALSE(memory->unbiased());
  for (const auto* codec : {unbiased.get(), plain.get(), memory.get()}) {
    EXPECT_EQ(codec->aggregation(), Aggregation::compressed_domain);
    EXPECT_EQ(codec->wire_bytes(1000), 4u * 10);  // values only
  }
  EXPECT_TRUE(unbiased->supports(CodecOperation::allgather));
  EXPECT_FALSE(memory->supports(CodecOperation::allgather));
  EXPECT_NEAR(plain->max_abs_error(1.0, 2, Algorithm::ring), 1.0, 1e-5);
  EXPECT_NEAR(unbiased->max_abs_error(1.0, 2, Algorithm::ring), 99.0, 1e-3);  // d/k − 1
  EXPECT_TRUE(std::isinf(memory->max_abs_error(1.0, 2, Algorithm::ring)));
  // (d/k − 1)·Σ||x_i||²/n with d/k = 1000/10.
  EXPECT_DOUBLE_EQ(*unbiased->variance_bound(8.0, 1000, 4, Algorithm::ring), 99.0 * 8.0 / 4);
  EXPECT_FALSE(plain->variance_bound(8.0, 1000, 4, Algorithm::ring));
}

// Every rank's kept positions, the bytes they sent and each tensor's share,
// for `steps` allreduces of `spec` over `layout` on `n` ranks.
struct RandkSteps {
  std::vector<std::vector<std::size_t>> per_tensor;  // [step][tensor] kept
  std::vector<double> sent;                          // [step] bytes, all ranks
};

// Runs them, checking on the way what holds for both scopes: a kept value
// is the rank's own (scale=none), the positions are the same on every rank
// and change with the step.
RandkSteps run_randk_steps(const std::string& spec, const TensorLayout& layout, int n,
                           int steps) {
  const std::size_t d = layout.total();
  RandkSteps result;
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 8, .bucket = 1});
    codec->set_layout(layout);
    CollectiveOptions options;
    options.chunk_bytes = 512;
    std::vector<float> previous_mask;
    for (int step = 0; step < steps; ++step) {
      const auto input = dense_input(comm.rank() + step, d);
      auto data = input;
      std::vector<float> own(d);
      const auto before = comm.data_bytes_sent();
      codec->allreduce_mean(comm, data, options, own);
      std::vector<double> sent{static_cast<double>(comm.data_bytes_sent() - before)};
      allreduce_values<double>(comm.transport(), sent, ReduceOp::sum, comm.options().timeout);
      std::vector<float> mask(d);
      std::vector<std::size_t> per_tensor;
      for (const TensorSlice& t : layout.tensors(d)) {
        std::size_t in_tensor = 0;
        for (std::size_t i = t.offset; i < t.offset + t.elements; ++i) {
          mask[i] = own[i] != 0.0f ? 1.0f : 0.0f;
          in_tensor += own[i] != 0.0f ? 1 : 0;
          if (own[i] != 0.0f) {
            EXPECT_EQ(own[i], input[i]);  // scale=none: the value itself
          }
        }
        per_tensor.push_back(in_tensor);
      }
      expect_identical_across_ranks(comm, mask);
      EXPECT_NE(mask, previous_mask) << "the positions did not change with the step";
      previous_mask = mask;
      if (comm.rank() == 0) {
        result.per_tensor.push_back(per_tensor);
        result.sent.push_back(sent[0]);
      }
    }
  });
  return result;
}

// select=tensor: every tensor keeps its own k_t; the ring moves values
// only: every segment's 4·(kept) bytes travel n − 1 hops in each of its two
// phases.
TEST(RandkCodecTest, TensorScopeKeepsEachTensorsShareAndSendsOnlyValues) {
  const std::vector<std::size_t> sizes{100, 1000, 7, 0, 1};
  const auto layout = TensorLayout::of_sizes(sizes);
  constexpr double kRatio = 0.05;
  std::size_t kept = 0;
  for (std::size_t size : sizes) kept += sparse_count(kRatio, size);
  for (int n : {2, 3, 5}) {
    const RandkSteps steps = run_randk_steps("randk:ratio=0.05,select=tensor,scale=none,ef=off",
                                             layout, n, 3);
    for (std::size_t s = 0; s < steps.sent.size(); ++s) {
      EXPECT_EQ(steps.sent[s], 2.0 * (n - 1) * 4.0 * static_cast<double>(kept));
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        EXPECT_EQ(steps.per_tensor[s][t], sparse_count(kRatio, sizes[t])) << "tensor " << t;
      }
    }
  }
}

// select=group (the default, MergeComp §4.1): k = ⌈ratio·d⌉ positions of
// the whole group, so 4·k bytes a segment-hop (one fewer element here than
// the tensors' ceilings add up to), drawn uniformly across the tensors.
TEST(RandkCodecTest, GroupScopeKeepsKOfTheWholeGroupAndSendsOnlyValues) {
  const std::vector<std::size_t> sizes{100, 1000, 7, 0, 1};
  const auto layout = TensorLayout::of_sizes(sizes);
  const std::size_t kept = sparse_count(0.05, layout.total());
  ASSERT_EQ(kept, 56u);
  for (int n : {1, 2, 3, 4, 7}) {
    const RandkSteps steps = run_randk_steps("randk:ratio=0.05,scale=none,ef=off", layout, n, 3);
    for (std::size_t s = 0; s < steps.sent.size(); ++s) {
      EXPECT_EQ(steps.sent[s], 2.0 * (n - 1) * 4.0 * static_cast<double>(kept));
      std::size_t total = 0;
      for (std::size_t k : steps.per_tensor[s]) total += k;
      EXPECT_EQ(total, kept);
    }
  }
}

// Under select=group a tensor of K of the group's N elements receives a
// hypergeometric share of the k draws: mean k·K/N, variance
// k·(K/N)·(1 − K/N)·(N − k)/(N − 1). Over 300 steps (independent draws: the
// step keys the generator) the first tensor's total is within 5σ of 300
// times the mean, and its share varies (per tensor it would be constant).
TEST(RandkCodecTest, GroupScopeSharesAreHypergeometric) {
  const std::vector<std::size_t> sizes{100, 900};
  const auto layout = TensorLayout::of_sizes(sizes);
  constexpr int kSteps = 300;
  const RandkSteps steps = run_randk_steps("randk:ratio=0.1,scale=none,ef=off", layout, 2, kSteps);
  const double k = 100, share = 100.0 / 1000.0, big_n = 1000;
  const double mean = k * share, variance = k * share * (1 - share) * (big_n - k) / (big_n - 1);
  double total = 0;
  std::size_t least = 100, most = 0;
  for (const auto& per_tensor : steps.per_tensor) {
    total += static_cast<double>(per_tensor[0]);
    least = std::min(least, per_tensor[0]);
    most = std::max(most, per_tensor[0]);
  }
  EXPECT_NEAR(total, kSteps * mean, 5 * std::sqrt(kSteps * variance));
  EXPECT_LT(least, most) << "the first tensor kept the same count every step";
}

// Ranks at different steps would draw different positions: the call check
// refuses before anything moves.
TEST(RandkCodecTest, RanksAtDifferentStepsAreRefused) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto codec = make_codec("randk:ratio=0.1,scale=none,ef=off");
    codec->set_step(comm.rank() == 0 ? 3 : 4);
    auto data = dense_input(comm.rank(), 100);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, ::testing::HasSubstr("step"));
}

// The reduction rank 0 of 2 encodes `input` with, on a unit norm.
std::unique_ptr<Encoding> two_rank_reduction(Codec& codec, std::span<const float> input) {
  StepSetup setup;
  setup.ranks = 2;
  setup.summed = 2;
  setup.input = input;
  setup.norm = 1.0;
  return codec.encoding_for(setup);
}

// One rank's encoding of the whole vector is 4 bytes per kept element.
TEST(RandkCodecTest, AnEncodingHoldsOnlyTheValues) {
  auto codec = make_codec("randk:ratio=0.02,scale=none,ef=off");
  const auto input = dense_input(0, 5000);
  const auto reduction = two_rank_reduction(*codec, input);
  std::vector<std::byte> bytes(reduction->max_encoded_bytes(input.size()));
  EXPECT_EQ(reduction->encode(input, 0, bytes), 4u * 100);
}

TEST(RandkCodecTest, CorruptChunksAreRefusedWithCommError) {
  auto codec = make_codec("randk:ratio=0.1,scale=none,ef=off");
  const auto input = dense_input(0, 100);
  const auto encoding = two_rank_reduction(*codec, input);
  ASSERT_NE(encoding->in_transit(), nullptr);  // the kept values are summed in transit
  Reduction* reduction = encoding->in_transit();
  std::vector<std::byte> bytes(reduction->max_encoded_bytes(100)), other(bytes.size());
  const std::size_t size = reduction->encode(input, 0, bytes);
  ASSERT_EQ(size, 40u);
  std::vector<float> out(100);
  EXPECT_NO_THROW(reduction->decode(std::span(bytes).first(size), 0, out));
  EXPECT_THROW(reduction->decode(std::span(bytes).first(size - 4), 0, out), CommError);
  EXPECT_THROW(reduction->decode(std::span(bytes).first(size - 1), 0, out), CommError);
  std::vector<std::byte> longer(size + 4);
  EXPECT_THROW(reduction->decode(longer, 0, out), CommError);
  reduction->encode(input, 0, other);
  const ReduceContext whole{0, 100, 0, 0};
  EXPECT_EQ(reduction->reduce(std::span(other).first(size), bytes, size, whole), size);
  EXPECT_THROW(reduction->reduce(std::span(other).first(size - 4), bytes, size, whole), CommError);
  EXPECT_THROW(reduction->reduce(std::span(other).first(size), bytes, size - 4, whole), CommError);
}

std::vector<float> small_input(int rank) {
  return make_vector(64, [&](std::size_t i) { return noise(rank, i) + 0.5f * rank; });
}

TEST(RandkCodecTest, ScaledVariantIsUnbiasedEndToEnd) {
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
    expect_unbiased_end_to_end("randk:ratio=0.1,scale=unbiased,ef=off", 3, algorithm, small_input,
                               3000);
  }
}

// With the positions shared, the mean of the ranks' C(x_i) is C(x̄): its
// expected squared error is (d/k − 1)·||x̄||² exactly (not the 1/n smaller
// value independent positions would give), within the bound at 5σ.
TEST(RandkCodecTest, ScaledVariantsErrorIsThatOfTheMeanWithinTheBound) {
  constexpr int kN = 4, kRounds = 2000;
  constexpr std::size_t kD = 200;
  const std::string spec = "randk:ratio=0.1,scale=unbiased,ef=off";  // k = 20, d/k = 10
  auto input = [](int r) {
    return make_vector(kD, [&](std::size_t i) { return noise(r, i) * 0.5f + noise(7, i); });
  };
  std::vector<double> mean(kD, 0.0);
  double squared_norm = 0;
  for (int r = 0; r < kN; ++r) {
    const auto x = input(r);
    for (std::size_t i = 0; i < kD; ++i) {
      mean[i] += x[i] / static_cast<double>(kN);
      squared_norm += static_cast<double>(x[i]) * x[i];
    }
  }
  double mean_norm = 0;
  for (double m : mean) mean_norm += m * m;
  const double expected = (10.0 - 1.0) * mean_norm;
  const SampleMean error = sample_mean(
      squared_errors(collect_rounds(spec, kN, Algorithm::ring, input, kRounds), mean));
  EXPECT_NEAR(error.mean, expected, 5 * error.standard_error);
  const auto bound = make_codec(spec)->variance_bound(squared_norm, kD, kN, Algorithm::ring);
  ASSERT_TRUE(bound.has_value());
  EXPECT_LE(error.mean, *bound + 5 * error.standard_error);
  // Independent positions per rank would give (d/k − 1)·Σ||x_i||²/n²: far below.
  EXPECT_GT(error.mean, 9.0 * squared_norm / (kN * kN) + 5 * error.standard_error);
}

TEST(RandkCodecTest, ErrorFeedbackSendsTheCompensatedValues) {
  constexpr std::size_t kD = 50;
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("randk:ratio=0.2");
    std::vector<float> residual(kD, 0.0f);
    for (int step = 0; step < 4; ++step) {
      auto data = dense_input(comm.rank() + 3 * step, kD);
      std::vector<float> pushed(kD), own(kD);
      for (std::size_t i = 0; i < kD; ++i) pushed[i] = data[i] + residual[i];
      codec->allreduce_mean(comm, data, {}, own);
      std::size_t kept = 0;
      for (std::size_t i = 0; i < kD; ++i) {
        if (own[i] != 0.0f) {
          EXPECT_EQ(own[i], pushed[i]) << "step " << step << " element " << i;
          ++kept;
        }
        residual[i] = pushed[i] - own[i];
      }
      EXPECT_EQ(kept, 10u);
    }
  });
}

}  // namespace
}  // namespace qccl::test
