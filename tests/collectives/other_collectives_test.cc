// Reduce-scatter, allgather(v) and broadcast against their closed forms.
#include <gtest/gtest.h>

#include <tuple>

#include "../support/collective_checks.h"
#include "../support/sparse_test_reduction.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// ranks, count, chunk bytes, algorithm
using Param = std::tuple<int, std::size_t, std::size_t, Algorithm>;
class CollectivesTest : public ::testing::TestWithParam<Param> {
 protected:
  int ranks() const { return std::get<0>(GetParam()); }
  CollectiveCase base(bool in_place = false) const {
    return {std::get<1>(GetParam()), std::get<3>(GetParam()), in_place, std::get<2>(GetParam())};
  }
};

TEST_P(CollectivesTest, ReduceScatterEqualsClosedForm) {
  run_world(ranks(), [&](Communicator& comm) { check_reduce_scatter(comm, base()); });
}

TEST_P(CollectivesTest, AllgatherEqualsClosedForm) {
  run_world(ranks(), [&](Communicator& comm) { check_allgather(comm, base(false)); });
}

TEST_P(CollectivesTest, AllgatherInPlaceEqualsClosedForm) {
  run_world(ranks(), [&](Communicator& comm) { check_allgather(comm, base(true)); });
}

TEST_P(CollectivesTest, AllgathervWithSizesThatDifferPerRank) {
  run_world(ranks(), [&](Communicator& comm) { check_allgatherv(comm, base()); });
}

const auto kRanks = ::testing::Values(1, 2, 3, 4, 7);
const auto kSizes = ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{10},
                                      std::size_t{1000}, std::size_t{100000});
const auto kChunks = ::testing::Values(std::size_t{96}, std::size_t{1} << 20);

const auto kNames = [](const ::testing::TestParamInfo<Param>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
         std::to_string(std::get<1>(info.param)) + "_chunk" +
         std::to_string(std::get<2>(info.param)) + "_" +
         test_name(std::string(to_string(std::get<3>(info.param))));
};
INSTANTIATE_TEST_SUITE_P(RanksSizes, CollectivesTest,
                         ::testing::Combine(kRanks, kSizes, kChunks,
                                            ::testing::Values(Algorithm::ring,
                                                              Algorithm::halving_doubling)),
                         kNames);
// MPI's own collectives take no chunk size: one instance each.
INSTANTIATE_TEST_SUITE_P(RanksSizesNative, CollectivesTest,
                         ::testing::Combine(kRanks, kSizes,
                                            ::testing::Values(std::size_t{1} << 20),
                                            ::testing::Values(Algorithm::native)),
                         kNames);

using BroadcastParam = std::tuple<int, std::size_t, std::size_t>;  // ranks, count, chunk bytes
class BroadcastTest : public ::testing::TestWithParam<BroadcastParam> {};

TEST_P(BroadcastTest, FromEveryRoot) {
  const auto [ranks, count, chunk] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    for (int root = 0; root < comm.size(); ++root) {
      check_broadcast(comm, {count, Algorithm::ring, false, chunk}, root);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(RanksSizes, BroadcastTest, ::testing::Combine(kRanks, kSizes, kChunks),
                         [](const ::testing::TestParamInfo<BroadcastParam>& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
                                  std::to_string(std::get<1>(info.param)) + "_chunk" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(ReduceScatterTest, ExplicitCountsIncludingEmptyBlocks) {
  run_world(3, [](Communicator& comm) {
    const std::vector<std::size_t> counts{5, 0, 7};
    Fp32Sum sum;
    std::vector<float> input(12);
    for (std::size_t i = 0; i < 12; ++i) input[i] = static_cast<float>(i * (comm.rank() + 1));
    const std::size_t first = comm.rank() == 0 ? 0 : comm.rank() == 1 ? 5 : 5;
    std::vector<float> output(counts[static_cast<std::size_t>(comm.rank())]);
    reduce_scatter(comm, input, output, sum, {}, counts);
    for (std::size_t i = 0; i < output.size(); ++i) {
      EXPECT_EQ(output[i], static_cast<float>((first + i) * 6));
    }
  });
}

TEST(ReduceScatterTest, RejectsCountsThatDoNotSumToTheInput) {
  run_world(2, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> input(10), output(4);
    const std::vector<std::size_t> counts{4, 4};
    EXPECT_THROW(reduce_scatter(comm, input, output, sum, {}, counts), InvalidArgument);
  });
}

TEST(ReduceScatterTest, NativeRefusesAReductionMpiCannotDo) {
  run_world(2, [](Communicator& comm) {
    SparseTestReduction sparse;
    std::vector<float> input(8), output(4);
    CollectiveOptions o;
    o.algorithm = Algorithm::native;
    EXPECT_THROW(reduce_scatter(comm, input, output, sparse, o), InvalidArgument);
  });
}

TEST(AllgatherTest, RejectsWrongOutputSize) {
  run_world(2, [](Communicator& comm) {
    std::vector<float> input(3), output(5);
    EXPECT_THROW(allgather(comm, input, output), InvalidArgument);
  });
}

}  // namespace
}  // namespace qccl::test
