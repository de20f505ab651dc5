#include <gtest/gtest.h>

#include <tuple>

#include "../support/collective_checks.h"
#include "../support/test_names.h"
#include "../support/world.h"

namespace qccl::test {
namespace {

using AllreduceParam = std::tuple<int, std::size_t, Algorithm, bool>;

class AllreduceTest : public ::testing::TestWithParam<AllreduceParam> {
 protected:
  int ranks() const { return std::get<0>(GetParam()); }
  CollectiveCase base() const {
    return {std::get<1>(GetParam()), std::get<2>(GetParam()), std::get<3>(GetParam())};
  }
};

TEST_P(AllreduceTest, Fp32SumEqualsClosedFormOnEveryRank) {
  run_world(ranks(), [&](Communicator& comm) { check_allreduce_fp32(comm, base()); });
}

// 64-byte chunks: many pipelined messages per segment, window reuse, and
// chunks far smaller than segments.
TEST_P(AllreduceTest, Fp32SumWithTinyPipelineChunks) {
  CollectiveCase c = base();
  c.chunk_bytes = 64;
  run_world(ranks(), [&](Communicator& comm) { check_allreduce_fp32(comm, c); });
}

std::string name(const ::testing::TestParamInfo<AllreduceParam>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
         std::to_string(std::get<1>(info.param)) + "_" +
         test_name(std::string(to_string(std::get<2>(info.param)))) +
         (std::get<3>(info.param) ? "_inplace" : "_outofplace");
}

INSTANTIATE_TEST_SUITE_P(RanksSizesAlgorithms, AllreduceTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{10}, std::size_t{1000},
                                                              std::size_t{100000}),
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling,
                                                              Algorithm::native),
                                            ::testing::Bool()),
                         name);

// Reductions that change a chunk's byte size and have granularity 4, through
// the algorithms that run codecs.
using EncodedParam = std::tuple<int, std::size_t, Algorithm, std::size_t>;
class EncodedAllreduceTest : public ::testing::TestWithParam<EncodedParam> {};

TEST_P(EncodedAllreduceTest, SparseReductionEqualsClosedFormOnEveryRank) {
  const auto [ranks, count, algorithm, chunk] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    check_allreduce_sparse(comm, {count, algorithm, false, chunk});
  });
}

TEST_P(EncodedAllreduceTest, OrderDependentSumsAreBitwiseIdenticalOnEveryRank) {
  const auto [ranks, count, algorithm, chunk] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    check_allreduce_noise(comm, {count, algorithm, true, chunk});
  });
}

INSTANTIATE_TEST_SUITE_P(
    RanksSizesChunks, EncodedAllreduceTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7, 8),
                       ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{10},
                                         std::size_t{1001}, std::size_t{100000}),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling),
                       ::testing::Values(std::size_t{100}, std::size_t{1} << 20)),
    [](const ::testing::TestParamInfo<EncodedParam>& info) {
      return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
             std::to_string(std::get<1>(info.param)) + "_" +
             test_name(std::string(to_string(std::get<2>(info.param)))) + "_chunk" +
             std::to_string(std::get<3>(info.param));
    });

}  // namespace
}  // namespace qccl::test
