// The 1-bit codecs: signSGD's majority vote equal to the sign of the sum of
// the ranks' signs on every element (0 on a tie), whether the votes are
// gathered as bits or counted in transit; one bit per element on the wire;
// SigNUM's momentum; EF-SignSGD's per-tensor scale ||p||_1/d and its
// residual; 1-bit SGD's two means per tensor. The shared checks, corrupt
// chunks and specs: sign_codecs_spec_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/counting_transport.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "sign_levels_reference.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/sign/sign_vote.h"
#include "qccl/collectives/allgather.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

// Noise with exact zeros of both signs, which vote +1.
float vote_input(int rank, std::size_t i) {
  if ((i + static_cast<std::size_t>(rank)) % 11 == 0) return 0.0f;
  if ((i + 2 * static_cast<std::size_t>(rank)) % 13 == 0) return -0.0f;
  return noise(rank, i);
}

float sign_vote(int ranks, std::size_t i) {
  int sum = 0;
  for (int r = 0; r < ranks; ++r) sum += vote_input(r, i) >= 0.0f ? 1 : -1;
  return sum > 0 ? 1.0f : sum < 0 ? -1.0f : 0.0f;
}

class SignVoteTest : public ::testing::TestWithParam<int> {};

// Allreduce and reduce-scatter results equal sign(sum_i sign(x_i)) exactly
// on every element, ties 0; the own contribution is sign(x).
TEST_P(SignVoteTest, IsTheSignOfTheSumOfSignsOnEveryElement) {
  const int n = GetParam();
  EXPECT_EQ(votes_counted_in_transit(n), n > 16);
  std::atomic<std::size_t> ties{0};
  run_world(n, [&](Communicator& comm) {
    const int r = comm.rank();
    for (std::size_t count : {1, 10, 1000}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        SCOPED_TRACE(std::to_string(count) + " elements, " + std::string(to_string(algorithm)));
        auto codec = make_codec("signsgd");
        CollectiveOptions options;
        options.algorithm = algorithm;
        options.chunk_bytes = 64;
        const auto input = make_vector(count, [&](std::size_t i) { return vote_input(r, i); });
        auto data = input;
        std::vector<float> own(count);
        codec->allreduce_mean(comm, data, options, own);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(data[i], sign_vote(n, i)) << "element " << i;
          ASSERT_EQ(own[i], input[i] >= 0.0f ? 1.0f : -1.0f) << "element " << i;
          if (r == 0 && data[i] == 0.0f) ++ties;
        }
        const Range mine = codec->reduce_scatter_blocks(count, n)[static_cast<std::size_t>(r)];
        std::vector<float> block(mine.count);
        codec->reduce_scatter_mean(comm, input, block, options);
        for (std::size_t i = 0; i < block.size(); ++i) {
          ASSERT_EQ(block[i], sign_vote(n, mine.first + i)) << "block element " << i;
        }
      }
    }
  });
  if (n % 2 == 0) {
    EXPECT_GT(ties.load(), 0u) << "no tie was tested";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SignVoteTest, ::testing::Values(1, 2, 3, 4, 7, 20));

// signsgd's allgather: every shard's signs as +/-1.
TEST(SignVoteTest, AllgatherGivesEachShardsSigns) {
  run_world(3, [](Communicator& comm) {
    constexpr std::size_t kCount = 37;
    const auto shard = make_vector(kCount, [&](std::size_t i) { return vote_input(comm.rank(), i); });
    std::vector<float> gathered(3 * kCount);
    make_codec("signsgd")->allgather(comm, shard, gathered);
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      ASSERT_EQ(gathered[i], vote_input(static_cast<int>(i / kCount), i % kCount) >= 0.0f ? 1.0f : -1.0f);
    }
  });
}

// The bytes a step sends beyond those of the same step on no data.
template <class Step>
std::size_t data_bytes(CountingTransport& counting, Step&& step) {
  const std::size_t before = counting.sent_bytes();
  step(0);
  const std::size_t empty = counting.sent_bytes() - before;
  step(1);
  return counting.sent_bytes() - before - 2 * empty;
}

// Gathered votes: each rank sends its (n-1) peers one bit per element (ring
// allgather, recursive doubling on 4 ranks), and for a reduce-scatter each
// block's bits to its owner. Counted in transit (20 ranks): int8 counters,
// 2(n-1)·d bytes over all ranks for an allreduce, (n-1)·d for a
// reduce-scatter — fewer than the n(n-1)·d/8 of gathered bits.
TEST(SignVoteTest, SendsOneBitPerElementOrCountsInTransitWhereThatIsLess) {
  constexpr std::size_t kCount = 1000;
  for (const auto& [n, algorithm] : {std::tuple{3, Algorithm::ring}, std::tuple{4, Algorithm::ring},
                                     std::tuple{4, Algorithm::halving_doubling},
                                     std::tuple{20, Algorithm::ring}}) {
    SCOPED_TRACE(std::to_string(n) + " ranks, " + std::string(to_string(algorithm)));
    std::atomic<std::size_t> allreduce_total{0}, reduce_scatter_total{0};
    run_in_process(n, [&](Transport& inner) {
      CountingTransport counting(inner);
      Communicator comm(counting, {kTestTimeout, true});
      auto codec = make_codec("signsgd");
      EXPECT_EQ(codec->wire_bytes(kCount), kCount / 8);
      CollectiveOptions options;
      options.algorithm = algorithm;
      options.chunk_bytes = 256;  // several chunks: each a whole number of bytes of bits
      const auto input = make_vector(kCount, [&](std::size_t i) { return vote_input(comm.rank(), i); });
      const std::size_t allreduce = data_bytes(counting, [&](std::size_t scale) {
        std::vector<float> data(input.begin(), input.begin() + static_cast<long>(scale * kCount));
        codec->allreduce_mean(comm, data, options);
      });
      const auto blocks = codec->reduce_scatter_blocks(kCount, n);
      const std::size_t reduce_scatter = data_bytes(counting, [&](std::size_t scale) {
        const auto my_blocks = codec->reduce_scatter_blocks(scale * kCount, n);
        std::vector<float> block(my_blocks[static_cast<std::size_t>(comm.rank())].count);
        codec->reduce_scatter_mean(comm, std::span(input).first(scale * kCount), block, options);
      });
      allreduce_total += allreduce;
      reduce_scatter_total += reduce_scatter;
      if (votes_counted_in_transit(n)) return;
      EXPECT_EQ(allreduce, static_cast<std::size_t>(n - 1) * codec->wire_bytes(kCount));
      std::size_t to_owners = 0;
      for (std::size_t q = 0; q < blocks.size(); ++q) {
        if (q != static_cast<std::size_t>(comm.rank())) to_owners += codec->wire_bytes(blocks[q].count);
      }
      EXPECT_EQ(reduce_scatter, to_owners);
    });
    const auto ranks = static_cast<std::size_t>(n);
    if (votes_counted_in_transit(n)) {
      EXPECT_EQ(allreduce_total.load(), 2 * (ranks - 1) * kCount);
      EXPECT_LT(allreduce_total.load(), ranks * (ranks - 1) * kCount / 8);
      EXPECT_EQ(reduce_scatter_total.load(), (ranks - 1) * kCount);
    }
  }
}

// Rank 0: g1 = (2, -4, 1, -1), g2 = (-3, 1, -1, 3); with beta = 1/2,
// m1 = (1, -2, 1/2, -1/2), m2 = (-1, -1/2, -1/4, 5/4): the second vote
// follows the momentum, not g2, on element 1. Rank 1 (two ranks):
// g1 = (-2, 4, 1, 1), g2 = (3, -1, -1, -3), m1 = (-1, 2, 1/2, 1/2),
// m2 = (1, 1/2, -1/4, -5/4): votes (0, 0, 1, 0), then (0, 0, -1, 0).
TEST(SignumTest, VotesWithTheMomentumOfAHandComputedTwoSteps) {
  const std::vector<std::vector<float>> g{{2, -4, 1, -1}, {-3, 1, -1, 3}};
  const std::vector<std::vector<float>> h{{-2, 4, 1, 1}, {3, -1, -1, -3}};
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("signum:momentum=0.5");
    auto store = std::make_shared<TensorStateStore>();
    codec->set_layout(TensorLayout::of_sizes(std::vector<std::size_t>{4}), store);
    auto data = g[0];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{1, -1, 1, -1}));
    auto m = store->floats("block0", "signum.momentum", 4);
    EXPECT_EQ(std::vector<float>(m.begin(), m.end()), (std::vector<float>{1, -2, 0.5f, -0.5f}));
    data = g[1];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{-1, -1, -1, 1}));
    m = store->floats("block0", "signum.momentum", 4);
    EXPECT_EQ(std::vector<float>(m.begin(), m.end()), (std::vector<float>{-1, -0.5f, -0.25f, 1.25f}));
  });
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("signum:momentum=0.5");
    const auto& mine = comm.rank() == 0 ? g : h;
    auto data = mine[0];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{0, 0, 1, 0}));
    data = mine[1];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{0, 0, -1, 0}));
  });
}

using Quantizer = std::vector<float> (*)(std::span<const float>);

// Error feedback around a per-tensor 1-bit quantizer, over a layout whose
// tensors span many pipeline chunks: each step's own contribution is the
// quantizer of p = x + e_old applied to each whole tensor (the levels are
// the tensor's, not the chunk's), the residual kept is fl(p - own) bit for
// bit, so sent + residual = input + previous residual; and the result is the
// mean of the ranks' contributions, added in rank order.
void expect_error_feedback_of(const std::string& spec, Quantizer quantize) {
  SCOPED_TRACE(spec);
  const std::vector<std::size_t> sizes{300, 1, 0, 457};
  const TensorLayout layout = TensorLayout::of_sizes(sizes);
  const std::size_t d = layout.total();
  run_world(3, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 3, .bucket = 1});
    auto store = std::make_shared<TensorStateStore>();
    codec->set_layout(layout, store);
    CollectiveOptions options;
    options.chunk_bytes = 64;  // 16 elements per chunk
    const auto tensors = layout.tensors(d);
    auto residual = [&](const TensorSlice& t) {
      return store->floats(t.name, "ef.residual", t.elements);
    };
    for (int step = 0; step < 4; ++step) {
      const auto x = make_vector(d, [&](std::size_t i) {
        return noise(comm.rank() + 7 * step, i) * (step % 2 ? 1e-3f : 1.0f);
      });
      std::vector<float> p(d), expected_own(d);
      for (const TensorSlice& t : tensors) {
        const auto e = residual(t);
        for (std::size_t j = 0; j < t.elements; ++j) p[t.offset + j] = x[t.offset + j] + e[j];
        if (t.elements == 0) continue;
        const auto q = quantize(std::span<const float>(p).subspan(t.offset, t.elements));
        std::copy(q.begin(), q.end(), expected_own.begin() + static_cast<long>(t.offset));
      }
      auto data = x;
      std::vector<float> own(d);
      codec->allreduce_mean(comm, data, options, own);
      for (std::size_t i = 0; i < d; ++i) {
        ASSERT_TRUE(same_bits(own[i], expected_own[i]))
            << "step " << step << " element " << i << ": " << own[i] << " vs " << expected_own[i];
      }
      for (const TensorSlice& t : tensors) {
        const auto e = residual(t);
        for (std::size_t j = 0; j < t.elements; ++j) {
          ASSERT_TRUE(same_bits(e[j], p[t.offset + j] - own[t.offset + j]))
              << "step " << step << " " << t.name << "[" << j << "]";
        }
      }
      std::vector<float> owns(3 * d);
      allgather(comm, own, owns);
      for (std::size_t i = 0; i < d; ++i) {
        const float mean = (owns[i] + owns[d + i] + owns[2 * d + i]) / 3.0f;
        ASSERT_TRUE(same_bits(data[i], mean)) << "step " << step << " element " << i;
      }
    }
  });
}

TEST(EfSignSgdTest, ScalesEachTensorByItsMeanMagnitudeAndKeepsTheResidual) {
  expect_error_feedback_of("ef-signsgd", scaled_sign);
}

TEST(OneBitTest, ReconstructsEachTensorsTwoMeansAndKeepsTheResidual) {
  expect_error_feedback_of("onebit", two_means);
}

// Tensor (3, -1, 0, -5, 3): non-negative mean 2, negative mean -3; tensor
// (-2, -4, -6): no non-negative element, negative mean -4. A second rank's
// (1, 1, 1, 1, -1) and (8, -8, 0) reconstruct as (1, 1, 1, 1, -1) and
// (4, -8, 4); the mean of the two ranks follows.
TEST(OneBitTest, TwoMeansPerTensorOnAHandExample) {
  const std::vector<std::size_t> sizes{5, 3};
  const std::vector<std::vector<float>> inputs{{3, -1, 0, -5, 3, -2, -4, -6},
                                               {1, 1, 1, 1, -1, 8, -8, 0}};
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("onebit-quantizer");
    codec->set_layout(TensorLayout::of_sizes(sizes));
    auto data = inputs[0];
    std::vector<float> own(8);
    codec->allreduce_mean(comm, data, {}, own);
    EXPECT_EQ(data, (std::vector<float>{2, -3, 2, -3, 2, -4, -4, -4}));
    EXPECT_EQ(own, data);
  });
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("onebit-quantizer");
    codec->set_layout(TensorLayout::of_sizes(sizes));
    auto data = inputs[static_cast<std::size_t>(comm.rank())];
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{1.5f, -1, 1.5f, -1, 0.5f, 0, -6, 0}));
  });
}

// An allgather of scaled signs: each shard is one tensor with its own scale.
TEST(ScaledSignTest, AllgatherScalesEachShardByItsOwnMeanMagnitude) {
  run_world(3, [](Communicator& comm) {
    const std::vector<std::size_t> counts{5, 0, 12};
    const int r = comm.rank();
    const auto shard = make_vector(counts[static_cast<std::size_t>(r)],
                                   [&](std::size_t i) { return noise(r, i); });
    std::vector<float> gathered(17);
    make_codec("scaled-sign")->allgatherv(comm, shard, counts, gathered);
    std::size_t at = 0;
    for (int q = 0; q < 3; ++q) {
      const auto count = counts[static_cast<std::size_t>(q)];
      if (count == 0) continue;
      const auto x = make_vector(count, [&](std::size_t i) { return noise(q, i); });
      const auto expected = scaled_sign(x);
      for (std::size_t i = 0; i < count; ++i) ASSERT_TRUE(same_bits(gathered[at + i], expected[i]));
      at += count;
    }
  });
}

// A multi-tensor encoding is one header per tensor plus one bit per element;
// what one step sends is that, to each of the n - 1 other ranks.
TEST(ScaledSignTest, WireBytesAreTheHeadersAndTheBitsTheCollectiveSends) {
  const std::vector<std::size_t> sizes{1000, 24, 0, 3000};
  for (const auto& [spec, header] : {std::pair<std::string, std::size_t>{"scaled-sign", 4},
                                     {"ef-signsgd", 4},
                                     {"onebit-quantizer", 8},
                                     {"onebit", 8}}) {
    SCOPED_TRACE(spec);
    run_in_process(3, [&](Transport& inner) {
      CountingTransport counting(inner);
      Communicator comm(counting, {kTestTimeout, true});
      auto codec = make_codec(spec);
      auto empty = make_codec(spec);
      codec->set_layout(TensorLayout::of_sizes(sizes));
      EXPECT_EQ(codec->wire_bytes(4024), 3 * header + 503);
      EXPECT_EQ(make_codec(spec)->wire_bytes(4024), header + 503);  // one unnamed tensor
      EXPECT_EQ(make_codec(spec)->wire_bytes(0), 0u);
      CollectiveOptions options;
      options.chunk_bytes = 1 << 20;  // one chunk per rank's encoding
      const std::size_t sent = data_bytes(counting, [&](std::size_t scale) {
        auto data = make_vector(scale * 4024, [&](std::size_t i) { return noise(comm.rank(), i); });
        (scale ? *codec : *empty).allreduce_mean(comm, data, options);
      });
      EXPECT_EQ(sent, 2 * codec->wire_bytes(4024));
    });
  }
}

}  // namespace
}  // namespace qccl::test
