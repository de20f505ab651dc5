// The 1-bit codecs (signSGD, SigNUM, scaled sign, EF-SignSGD, 1-bit SGD)
// through the shared checks: every operation on every size and algorithm;
// exact resume; corrupt chunks rejected; canonical specs, layouts that
// disagree and operations a codec lacks refused before data moves.
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
  return codec.encoding_for(setup);
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
