// Rand-k: its spec and the refused combination; the same k_t positions of
// every tensor on every rank with only values on the wire (the encoding's
// size, and the bytes the ring sends); the scaled variant unbiased at 5σ,
// its mean squared error equal to (d/k − 1)·||x̄||² (positions shared by the
// ranks, so no 1/n) and within variance_bound; corrupt chunks refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
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
  EXPECT_EQ(make_codec("randk")->spec(), "randk:ratio=0.01,scale=none,ef=on");
  EXPECT_EQ(make_codec("randk:scale=unbiased")->spec(), "randk:ratio=0.01,scale=unbiased,ef=off");
  EXPECT_EQ(make_codec("randk:ef=off,ratio=0.5")->spec(), "randk:ratio=0.5,scale=none,ef=off");
  for (const char* spec : {"randk", "randk:scale=unbiased,ratio=0.1", "randk:ef=off"}) {
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

// Every rank keeps the same k_t positions of every tensor — no rank sent
// them — and changes them every step; the ring moves values only: every
// segment's 4·(kept) bytes travel n − 1 hops in each of its two phases.
TEST(RandkCodecTest, EveryRankKeepsTheSamePositionsAndSendsOnlyValues) {
  const std::vector<std::size_t> sizes{100, 1000, 7, 0, 1};
  const auto layout = TensorLayout::of_sizes(sizes);
  const std::size_t d = layout.total();
  constexpr double kRatio = 0.05;
  std::size_t kept = 0;
  for (std::size_t size : sizes) kept += sparse_count(kRatio, size);
  for (int n : {2, 3, 5}) {
    run_world(n, [&](Communicator& comm) {
      auto codec = make_codec("randk:ratio=0.05,scale=none,ef=off", {.seed = 8, .bucket = 1});
      codec->set_layout(layout);
      CollectiveOptions options;
      options.chunk_bytes = 512;
      std::vector<float> previous_mask;
      for (int step = 0; step < 3; ++step) {
        const auto input = dense_input(comm.rank() + step, d);
        auto data = input;
        std::vector<float> own(d);
        const auto before = comm.data_bytes_sent();
        codec->allreduce_mean(comm, data, options, own);
        std::vector<double> sent{static_cast<double>(comm.data_bytes_sent() - before)};
        allreduce_values<double>(comm.transport(), sent, ReduceOp::sum, comm.options().timeout);
        EXPECT_EQ(sent[0], 2.0 * (n - 1) * 4.0 * static_cast<double>(kept));
        std::vector<float> mask(d);
        for (const TensorSlice& t : layout.tensors(d)) {
          std::size_t in_tensor = 0;
          for (std::size_t i = t.offset; i < t.offset + t.elements; ++i) {
            mask[i] = own[i] != 0.0f ? 1.0f : 0.0f;
            in_tensor += own[i] != 0.0f ? 1 : 0;
            if (own[i] != 0.0f) {
              EXPECT_EQ(own[i], input[i]);  // scale=none: the value itself
            }
          }
          EXPECT_EQ(in_tensor, sparse_count(kRatio, t.elements)) << t.name;
        }
        expect_identical_across_ranks(comm, mask);
        EXPECT_NE(mask, previous_mask) << "the positions did not change with the step";
        previous_mask = mask;
      }
    });
  }
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
