// MergeComp plans from the slowest rank's profile (§4.3's A and p, the
// maximum over ranks of every time), not from rank 0's: ranks whose
// profiles differ get the same, element-wise maximal profile, bit for bit,
// on 1, 2, 3, 4 and 7 ranks, and a plan searched on it differs from the one
// rank 0's own profile gives.
#include <gtest/gtest.h>

#include <vector>

#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/scheduling/slowest_profile.h"

namespace qccl::test {
namespace {

constexpr std::size_t kTensors = 8;

// Every rank: tensor t ready at (t + 1) ms, backward ends at 8 ms. The last
// rank (when there are two or more) waits 30 ms for its last tensor, so its
// backward ends then; the optimizer's time grows with the rank and rank 0
// loads data slowest, so every field's maximum comes from a different rank.
StepProfile rank_profile(int rank, int ranks) {
  StepProfile p;
  p.elements.assign(kTensors, 1000);
  for (std::size_t t = 0; t < kTensors; ++t) p.ready.push_back(1e-3 * static_cast<double>(t + 1));
  p.backward_end = 8e-3;
  if (ranks > 1 && rank == ranks - 1) p.ready.back() = p.backward_end = 30e-3;
  p.optimizer_per_element = 1e-9 * rank;
  p.other = rank == 0 ? 5e-3 : 1e-3;
  p.overlap_updates = false;
  return p;
}

// h = 2 ms per group, g = 1 µs per element (1 ms per tensor).
const GroupCosts kCosts{{2e-3, 0}, {0, 1e-6}};

class SlowestProfileTest : public ::testing::TestWithParam<int> {};

TEST_P(SlowestProfileTest, EveryRankGetsTheMaximumOfEveryTime) {
  const int ranks = GetParam();
  std::vector<StepProfile> results(static_cast<std::size_t>(ranks));
  run_world(ranks, [&](Communicator& comm) {
    results[static_cast<std::size_t>(comm.rank())] =
        slowest_rank_profile(comm, rank_profile(comm.rank(), ranks));
  });
  StepProfile expected = rank_profile(0, ranks);
  for (int r = 1; r < ranks; ++r) {
    const StepProfile p = rank_profile(r, ranks);
    for (std::size_t t = 0; t < kTensors; ++t) {
      expected.ready[t] = std::max(expected.ready[t], p.ready[t]);
    }
    expected.backward_end = std::max(expected.backward_end, p.backward_end);
    expected.optimizer_per_element = std::max(expected.optimizer_per_element, p.optimizer_per_element);
    expected.other = std::max(expected.other, p.other);
  }
  for (const StepProfile& p : results) {
    EXPECT_EQ(p.elements, expected.elements);
    EXPECT_EQ(p.ready, expected.ready);
    EXPECT_EQ(p.backward_end, expected.backward_end);
    EXPECT_EQ(p.optimizer_per_element, expected.optimizer_per_element);
    EXPECT_EQ(p.other, expected.other);
    EXPECT_EQ(p.overlap_updates, expected.overlap_updates);
  }
}

// Rank 0 alone: tensors ready 1..8 ms, so 3 + 5 tensors overlap best. The
// slowest rank's last tensor comes at 30 ms: the first 7 go during the wait,
// the last alone (7 + 1).
TEST_P(SlowestProfileTest, ThePlanFollowsTheSlowestRank) {
  const int ranks = GetParam();
  const GroupSizes own = mergecomp_search(rank_profile(0, ranks), kCosts, {}).groups;
  EXPECT_EQ(own, (GroupSizes{3, 5}));
  run_world(ranks, [&](Communicator& comm) {
    const StepProfile slowest = slowest_rank_profile(comm, rank_profile(comm.rank(), ranks));
    const GroupSizes planned = mergecomp_search(slowest, kCosts, {}).groups;
    EXPECT_EQ(planned, ranks == 1 ? own : (GroupSizes{7, 1})) << "rank " << comm.rank();
  });
}

TEST(SlowestProfileRefusalTest, RanksWithOtherModelsAreRefusedOnEveryRank) {
  const std::string message = expect_throw_on_every_rank<InvalidArgument>(3, [](Communicator& comm) {
    StepProfile p = rank_profile(comm.rank(), 3);
    if (comm.rank() == 1) {
      p.elements.pop_back();
      p.ready.pop_back();
    }
    slowest_rank_profile(comm, p);
  });
  EXPECT_NE(message.find("same model"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, SlowestProfileTest, ::testing::Values(1, 2, 3, 4, 7));

}  // namespace
}  // namespace qccl::test
