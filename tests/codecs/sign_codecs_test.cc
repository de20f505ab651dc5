// The 1-bit codecs: signSGD's majority vote equal to the sign of the sum of
// the ranks' signs on every element (0 on a tie), whether the votes are
// gathered as bits or counted in transit; one bit per element on the wire;
// SigNUM's momentum; EF-SignSGD's per-tensor scale ||p||_1/d and its
// residual; 1-bit SGD's two means per tensor; every operation on every size
// and algorithm; exact resume; corrupt chunks rejected; specs.
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
#include "qccl/codecs/codec_registry.h"
#include "qccl/codecs/sign_vote.h"
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

// The values a tensor's elements decode to: ||p||_1/d * sign(p), or the two
// means, in fp64 in element order as the codecs compute them.
std::vector<float> scaled_sign(std::span<const float> p) {
  double sum = 0;
  for (float v : p) sum += std::abs(static_cast<double>(v));
  const auto s = static_cast<float>(sum / static_cast<double>(p.size()));
  std::vector<float> q(p.size());
  for (std::size_t j = 0; j < p.size(); ++j) q[j] = p[j] >= 0.0f ? s : -s;
  return q;
}

std::vector<float> two_means(std::span<const float> p) {
  double positive = 0, negative = 0;
  std::size_t positives = 0;
  for (float v : p) {
    if (v >= 0.0f) {
      positive += v;
      ++positives;
    } else {
      negative += v;
    }
  }
  const std::size_t negatives = p.size() - positives;
  const float up = positives ? static_cast<float>(positive / static_cast<double>(positives)) : 0.0f;
  const float down = negatives ? static_cast<float>(negative / static_cast<double>(negatives)) : 0.0f;
  std::vector<float> q(p.size());
  for (std::size_t j = 0; j < p.size(); ++j) q[j] = p[j] >= 0.0f ? up : down;
  return q;
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

// Every operation, size and algorithm (codec_checks.h).
const std::vector<std::string> kSignCodecs{"signsgd",    "signum",           "scaled-sign",
                                           "ef-signsgd", "onebit-quantizer", "onebit"};

using OperationParam = std::tuple<std::string, CodecOperation, int>;
class SignCodecOperationTest : public ::testing::TestWithParam<OperationParam> {};

// Beyond 16 ranks the votes are counted in transit (the operations on
// ranks {1,2,3,4,7} are in codec_operations_test.cc).
TEST_P(SignCodecOperationTest, AgreesOnEveryRankOnEverySizeAndAlgorithm) {
  const auto& [spec, operation, ranks] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    for (std::size_t count : {0, 1, 10, 1000}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        check_codec_operation(comm, spec, operation, count, algorithm);
      }
    }
  });
}

std::string operation_name(const ::testing::TestParamInfo<OperationParam>& info) {
  return test_name(std::get<0>(info.param) + "_" + std::string(to_string(std::get<1>(info.param))) +
                   "_n" + std::to_string(std::get<2>(info.param)));
}

const auto kOperations = ::testing::Values(CodecOperation::allreduce_mean,
                                           CodecOperation::reduce_scatter_mean,
                                           CodecOperation::allgather);

INSTANTIATE_TEST_SUITE_P(VotesInTransit, SignCodecOperationTest,
                         ::testing::Combine(::testing::Values(std::string("signsgd"),
                                                              std::string("signum")),
                                            kOperations, ::testing::Values(20)),
                         operation_name);

class SignCodecResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SignCodecResumeTest, ResumesExactlyOverNamedTensors) {
  const std::string& spec = GetParam();
  const bool stateful = spec == "signum" || spec == "ef-signsgd" || spec == "onebit";
  const std::vector<std::size_t> sizes{300, 1, 0, 700};
  run_world(3, [&](Communicator& comm) {
    check_codec_resumes_exactly(comm, spec, TensorLayout::of_sizes(sizes), 6, stateful);
  });
}

INSTANTIATE_TEST_SUITE_P(Codecs, SignCodecResumeTest, ::testing::ValuesIn(kSignCodecs),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return test_name(info.param);
                         });

// A step's encoding on rank 0 of `ranks` for `input` (allreduce mean).
std::unique_ptr<Encoding> reduction_of(Codec& codec, int ranks, std::span<const float> input) {
  StepSetup setup;
  setup.ranks = ranks;
  setup.summed = ranks;
  setup.input = input;
  setup.norm = 1.0;
  return codec.reduction_for(setup);
}

std::vector<std::byte> encoded(Encoding& reduction, std::span<const float> input) {
  std::vector<std::byte> bytes(reduction.max_encoded_bytes(input.size()));
  bytes.resize(reduction.encode(input, 0, bytes));
  return bytes;
}

TEST(SignCodecCorruptTest, GatheredBitsRejectTruncatedPaddedOrLongChunks) {
  const auto input = make_vector(20, [](std::size_t i) { return noise(0, i); });
  auto reduction = reduction_of(*make_codec("signsgd"), 3, input);
  auto bytes = encoded(*reduction, input);
  ASSERT_EQ(bytes.size(), 3u);
  std::vector<float> out(20);
  reduction->decode(bytes, 0, out);
  for (std::size_t i = 0; i < 20; ++i) EXPECT_EQ(out[i], input[i] >= 0 ? 1.0f : -1.0f);
  EXPECT_THROW(reduction->decode(std::span(bytes).first(2), 0, out), CommError);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_THROW(reduction->decode(longer, 0, out), CommError);
  bytes[2] |= std::byte{0x80};  // past element 19
  EXPECT_THROW(reduction->decode(bytes, 0, out), CommError);
  EXPECT_EQ(reduction->in_transit(), nullptr);  // gathered bits are not summed in transit
}

TEST(SignCodecCorruptTest, VoteCountsRejectCountsBeyondTheRanks) {
  for (int ranks : {20, 200}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const auto input = make_vector(10, [](std::size_t i) { return noise(1, i); });
    auto encoding = reduction_of(*make_codec("signsgd"), ranks, input);
    ASSERT_NE(encoding->in_transit(), nullptr);  // counted in transit beyond 16 ranks
    Reduction* reduction = encoding->in_transit();
    const std::size_t width = ranks <= 127 ? 1 : 4;
    auto mine = encoded(*reduction, input);
    ASSERT_EQ(mine.size(), 10 * width);
    std::vector<float> out(10);
    reduction->decode_contribution(mine, 0, out);
    for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(out[i], input[i] >= 0 ? 1.0f : -1.0f);
    // A partial count of `ranks` at element 0 (little-endian), then one more vote.
    auto full = mine;
    std::memset(full.data(), 0, width);
    full[0] = static_cast<std::byte>(ranks);
    auto accum = mine;
    accum[0] = std::byte{1};
    if (width == 4) std::memset(accum.data() + 1, 0, 3);
    EXPECT_THROW(reduction->reduce(full, accum, accum.size(), {0, 10, 0, 1}), CommError);
    reduction->decode(full, 0, out);
    EXPECT_EQ(out[0], static_cast<float>(ranks));
    full[0] = static_cast<std::byte>(ranks + 1);
    EXPECT_THROW(reduction->decode(full, 0, out), CommError);
    EXPECT_THROW(reduction->decode_contribution(full, 0, out), CommError);
    EXPECT_THROW(reduction->decode(std::span(mine).first(mine.size() - 1), 0, out), CommError);
    EXPECT_THROW(reduction->reduce(std::span(mine).first(mine.size() - 1), accum, accum.size(),
                                   {0, 10, 0, 1}),
                 CommError);
  }
}

// Levels a header cannot hold: not finite, a negative scale, a positive
// mean below zero or a negative mean above it; and truncated chunks.
TEST(SignCodecCorruptTest, LevelHeadersRejectImpossibleLevels) {
  const auto input = make_vector(20, [](std::size_t i) { return noise(2, i); });
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [spec, bad] : {std::pair<std::string, std::vector<std::vector<float>>>{
                                      "scaled-sign", {{nan}, {-0.5f}, {INFINITY}}},
                                  {"onebit-quantizer", {{-0.5f, -0.5f}, {0.5f, 0.5f}, {nan, -1}}}}) {
    SCOPED_TRACE(spec);
    auto reduction = reduction_of(*make_codec(spec), 2, input);
    const auto bytes = encoded(*reduction, input);
    const std::size_t header = spec == "scaled-sign" ? 4 : 8;
    ASSERT_EQ(bytes.size(), header + 3);
    std::vector<float> out(20);
    reduction->decode(bytes, 0, out);
    const auto expected = spec == "scaled-sign" ? scaled_sign(input) : two_means(input);
    EXPECT_EQ(out, expected);
    for (const auto& levels : bad) {
      auto corrupt = bytes;
      std::memcpy(corrupt.data(), levels.data(), levels.size() * sizeof(float));
      EXPECT_THROW(reduction->decode(corrupt, 0, out), CommError) << levels[0];
    }
    EXPECT_THROW(reduction->decode(std::span(bytes).first(bytes.size() - 1), 0, out), CommError);
    auto padded = bytes;
    padded.back() |= std::byte{0x10};  // past element 19
    EXPECT_THROW(reduction->decode(padded, 0, out), CommError);
  }
}

TEST(SignCodecSpecTest, CanonicalSpecsAndWhatEachCodecIs) {
  for (const auto& [text, canonical] : std::vector<std::pair<std::string, std::string>>{
           {"signsgd", "signsgd"},
           {"signum", "signum:momentum=0.9"},
           {"signum:momentum=0.5", "signum:momentum=0.5"},
           {"scaled-sign", "scaled-sign"},
           {"ef-signsgd", "ef-signsgd"},
           {"onebit-quantizer", "onebit-quantizer"},
           {"onebit", "onebit"}}) {
    const auto codec = make_codec(text);
    EXPECT_EQ(codec->spec(), canonical);
    EXPECT_EQ(make_codec(codec->spec())->spec(), canonical);
    EXPECT_FALSE(codec->unbiased()) << text;
    EXPECT_EQ(codec->aggregation(), Aggregation::allgather_decode) << text;
    EXPECT_EQ(codec->granularity(), 8u) << text;
    EXPECT_TRUE(codec->supports(CodecOperation::allreduce_mean));
    EXPECT_TRUE(codec->supports(CodecOperation::reduce_scatter_mean));
    const bool quantizer = text == "scaled-sign" || text == "onebit-quantizer";
    EXPECT_EQ(codec->supports(CodecOperation::allgather), quantizer || text == "signsgd") << text;
    const double bound = codec->max_abs_error(2.0, 4, Algorithm::ring);
    if (quantizer) {
      EXPECT_DOUBLE_EQ(bound, 2.0 * (1 + 4 * std::ldexp(1.0, -23))) << text;
    } else {
      EXPECT_TRUE(std::isinf(bound)) << text;
    }
    EXPECT_FALSE(codec->has_native_equivalent());
  }
  EXPECT_EQ(make_codec("signsgd")->wire_bytes(1000), 125u);
  EXPECT_EQ(make_codec("signum")->wire_bytes(1001), 126u);
  EXPECT_EQ(make_codec("scaled-sign")->wire_bytes(1000), 4 + 125u);
  EXPECT_EQ(make_codec("ef-signsgd")->wire_bytes(1000), 4 + 125u);
  EXPECT_EQ(make_codec("onebit")->wire_bytes(1000), 8 + 125u);
  for (const auto& [bad, message] : std::vector<std::pair<std::string, std::string>>{
           {"signum:momentum=1", "give a number in [0, 0.999999]"},
           {"signum:beta=0.9", "valid: momentum"},
           {"signsgd:momentum=0.9", "valid: none"},
           {"ef-signsgd:bits=1", "valid: none"},
           {"onebit(fp32)", "wraps no other codec"}}) {
    try {
      make_codec(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(message)) << bad;
    }
  }
  EXPECT_FALSE(votes_counted_in_transit(1));
  EXPECT_FALSE(votes_counted_in_transit(16));
  EXPECT_TRUE(votes_counted_in_transit(17));
  EXPECT_TRUE(votes_counted_in_transit(127));
  EXPECT_TRUE(votes_counted_in_transit(128));
}

// Ranks whose layouts differ would read each other's headers wrongly: the
// call check stops them. A SigNUM tensor whose size changed is refused on
// every rank before anything moves.
TEST(SignCodecSpecTest, DisagreeingLayoutsAndResizedMomentaAreRefusedBeforeDataMoves) {
  const auto message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto codec = make_codec("ef-signsgd");
    const std::vector<std::size_t> sizes =
        comm.rank() == 0 ? std::vector<std::size_t>{10, 10} : std::vector<std::size_t>{5, 15};
    codec->set_layout(TensorLayout::of_sizes(sizes));
    std::vector<float> data(20, 1.0f);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, HasSubstr("tensors#")) << message;
  expect_throw_on_every_rank<InvalidArgument>(2, [](Communicator& comm) {
    auto codec = make_codec("signum");
    std::vector<float> data(8, 1.0f);
    codec->allreduce_mean(comm, data);
    data.resize(9);
    try {
      codec->allreduce_mean(comm, data);
    } catch (const InvalidArgument&) {
      std::vector<float> ones(3, 1.0f);  // still in step
      make_codec("fp32")->allreduce_mean(comm, ones);
      EXPECT_EQ(ones[0], 1.0f);
      throw;
    }
  });
}

// signum has no allgather (nor do the error-feedback codecs): refused by name.
TEST(SignCodecSpecTest, RefusesOperationsItLacksByName) {
  run_world(2, [](Communicator& comm) {
    std::vector<float> shard(4, 1.0f), out(8);
    for (const std::string spec : {"signum:momentum=0.9", "ef-signsgd", "onebit"}) {
      try {
        make_codec(spec)->allgather(comm, shard, out);
        ADD_FAILURE() << spec << " ran an allgather";
      } catch (const InvalidArgument& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr(spec + " has no allgather"));
      }
    }
  });
}

}  // namespace
}  // namespace qccl::test
