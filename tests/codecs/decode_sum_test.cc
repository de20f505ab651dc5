// Codecs that aggregate by allgather or by exchange (their ranks' encodings
// cannot be combined in transit) return the fp32 mean, added in rank order,
// of every rank's own contribution Q(x_q): bit for bit, for the allreduce
// and for each rank's reduce-scatter block, whatever the pipeline chunks
// (the sum goes chunk by chunk, adding each decoding in place where the
// codec fuses the two), on ranks {1,2,3,4,7} and awkward sizes.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allgather.h"

namespace qccl::test {
namespace {

const std::vector<std::string> kGatheredCodecs{
    "qsgd",       "qsgd:bits=4,bucket=128",
    "minmax",     "minmax:bits=4,bucket=100,rounding=shift",
    "minmax:bits=3,bucket=0,rounding=dither",
    "minmax:bits=5,bucket=64,levels=learned,refit=1",
    "natural",    "qgenx",
    "qgenx:bits=4,levels=qada,coding=huffman,norm=2,bucket=100"};

// The fp32 mean of the ranks' values at element i of `owns` (rank q's at
// q·stride + offset + i), added in rank order.
float mean_in_rank_order(const std::vector<float>& owns, int ranks, std::size_t stride,
                         std::size_t offset, std::size_t i) {
  float sum = owns[offset + i];
  for (int q = 1; q < ranks; ++q) sum += owns[static_cast<std::size_t>(q) * stride + offset + i];
  return ranks == 1 ? sum : sum / static_cast<float>(ranks);
}

// check(d, options) for each vector length and for chunks of 64 elements
// (many per rank) and of the default 1 MiB.
template <class Check>
void for_each_length_and_chunk(Check&& check) {
  for (const std::size_t chunk_bytes : {std::size_t{256}, std::size_t{1} << 20}) {
    for (const std::size_t d : {std::size_t{1}, std::size_t{1000}, std::size_t{70001}}) {
      SCOPED_TRACE("d " + std::to_string(d) + ", chunk bytes " + std::to_string(chunk_bytes));
      CollectiveOptions options;
      options.chunk_bytes = chunk_bytes;
      check(d, options);
    }
  }
}

// Every rank's own contribution, rank after rank.
std::vector<float> every_contribution(Communicator& comm, const std::vector<float>& own) {
  std::vector<float> owns(own.size() * static_cast<std::size_t>(comm.size()));
  allgather(comm, own, owns);
  return owns;
}

using Param = std::tuple<std::string, int>;  // codec, ranks
class DecodeSumTest : public ::testing::TestWithParam<Param> {};

TEST_P(DecodeSumTest, AllreduceIsTheMeanOfTheContributionsInRankOrder) {
  const auto& [spec, ranks] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 5});
    for_each_length_and_chunk([&](std::size_t d, const CollectiveOptions& options) {
      auto data = make_vector(d, [&](std::size_t i) { return noise(comm.rank(), i) * 3.0f; });
      std::vector<float> own(d);
      codec->allreduce_mean(comm, data, options, own);
      const auto owns = every_contribution(comm, own);
      for (std::size_t i = 0; i < d; ++i) {
        const float expected = mean_in_rank_order(owns, ranks, d, 0, i);
        ASSERT_TRUE(same_bits(data[i], expected)) << "element " << i << ": " << data[i]
                                                  << " vs " << expected;
      }
    });
  });
}

TEST_P(DecodeSumTest, ReduceScatterBlockIsTheMeanOfTheContributionsInRankOrder) {
  const auto& [spec, ranks] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 6});
    for_each_length_and_chunk([&](std::size_t d, const CollectiveOptions& options) {
      const auto input = make_vector(d, [&](std::size_t i) { return noise(comm.rank() + 9, i); });
      const auto blocks = codec->reduce_scatter_blocks(d, ranks);
      const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
      std::vector<float> output(mine.count), own(d);
      codec->reduce_scatter_mean(comm, input, output, options, own);
      const auto owns = every_contribution(comm, own);
      for (std::size_t i = 0; i < mine.count; ++i) {
        const float expected = mean_in_rank_order(owns, ranks, d, mine.first, i);
        ASSERT_TRUE(same_bits(output[i], expected)) << "element " << mine.first + i << ": "
                                                    << output[i] << " vs " << expected;
      }
    });
  });
}

INSTANTIATE_TEST_SUITE_P(CodecsRanks, DecodeSumTest,
                         ::testing::Combine(::testing::ValuesIn(kGatheredCodecs),
                                            ::testing::Values(1, 2, 3, 4, 7)),
                         [](const auto& info) {
                           return test_name(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

}  // namespace
}  // namespace qccl::test
