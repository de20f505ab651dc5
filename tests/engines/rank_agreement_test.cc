// A step each rank does alone ends together: one rank's failure reaches
// every rank, with its message, instead of leaving the others waiting; and
// replicas whose parameters differ are named on every rank.
#include <gtest/gtest.h>

#include "qccl/common/errors.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/engines/replica_check.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

TEST(RankAgreement, EveryRankLearnsWhichRanksFailedAndWhy) {
  std::vector<std::string> seen(3);
  test::run_world(3, [&](Communicator& comm) {
    const std::string mine = comm.rank() == 0 ? "" : "disk " + std::to_string(comm.rank()) + " full";
    seen[static_cast<std::size_t>(comm.rank())] = failures_of_ranks(comm, "test", mine);
  });
  for (const auto& text : seen) EXPECT_EQ(text, "rank 1: disk 1 full; rank 2: disk 2 full");
}

TEST(RankAgreement, SuccessEverywhereIsEmptyAndOneRankGetsItsOwnMessage) {
  test::run_world(4, [](Communicator& comm) { EXPECT_EQ(failures_of_ranks(comm, "test", ""), ""); });
  test::run_world(1, [](Communicator& comm) {
    EXPECT_EQ(failures_of_ranks(comm, "test", "no space"), "no space");
  });
}

TEST(RankAgreement, RowsOfRanksAreExactOnEveryRank) {
  test::run_world(3, [](Communicator& comm) {
    const std::int64_t row[2] = {comm.rank() - 1, std::int64_t{1} << 62};
    const auto table = rows_of_ranks(comm, row, "test");
    EXPECT_EQ(table, (std::vector<std::int64_t>{-1, 1LL << 62, 0, 1LL << 62, 1, 1LL << 62}));
  });
}

TEST(ReplicaCheck, NamesTheStepAndWhichRanksDiffer) {
  const auto message = test::expect_throw_on_every_rank<MismatchError>(4, [](Communicator& comm) {
    verify_replicas(comm, comm.rank() % 2 == 1 ? 0x8000'0000'0000'0001ULL : 7, 7, "test");
  });
  EXPECT_NE(message.find("step 7 (test): the replicas' parameters differ: ranks {0,2} hold "
                         "checksum 0000000000000007; ranks {1,3} hold checksum 8000000000000001"),
            std::string::npos) << message;
  test::run_world(3, [](Communicator& comm) { verify_replicas(comm, 42, 7, "test"); });
}

}  // namespace
}  // namespace qccl::engines
