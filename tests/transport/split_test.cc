// Transport::split in process: groups by color ordered by key, messages and
// collectives that stay inside a group and never match the parent's, and a
// bounded wait when a rank never splits.
#include <gtest/gtest.h>

#include <numeric>

#include "qccl/common/errors.h"
#include "qccl/transport/local_transport.h"

namespace qccl {
namespace {

constexpr Timeout kTimeout = std::chrono::seconds(30);

TEST(TransportSplitTest, GroupsByColorRankedByKey) {
  run_in_process(7, [](Transport& world) {
    const int color = world.rank() % 3;
    auto part = world.split(color, -world.rank(), kTimeout);  // reversed order
    std::vector<int> members;
    for (int r = color; r < 7; r += 3) members.push_back(r);
    ASSERT_EQ(part->size(), static_cast<int>(members.size()));
    const auto place = std::find(members.rbegin(), members.rend(), world.rank()) - members.rbegin();
    EXPECT_EQ(part->rank(), place);
    std::vector<std::int64_t> sum{world.rank()};
    allreduce_values<std::int64_t>(*part, sum, ReduceOp::sum, kTimeout);
    EXPECT_EQ(sum[0], std::accumulate(members.begin(), members.end(), std::int64_t{0}));
  });
}

TEST(TransportSplitTest, MessagesStayInTheGroupAndApartFromTheParent) {
  run_in_process(4, [](Transport& world) {
    auto part = world.split(world.rank() / 2, world.rank(), kTimeout);
    const int peer = 1 - part->rank();
    int from_group = -1, from_world = -1;
    const int to_group = 100 + world.rank(), to_world = 200 + world.rank();
    // Same tag on both: each receive matches only its own transport's send.
    auto world_recv = world.irecv(world.rank() ^ 1, 5, std::as_writable_bytes(std::span(&from_world, 1)));
    auto group_recv = part->irecv(peer, 5, std::as_writable_bytes(std::span(&from_group, 1)));
    part->isend(peer, 5, std::as_bytes(std::span(&to_group, 1)))->wait(kTimeout);
    world.isend(world.rank() ^ 1, 5, std::as_bytes(std::span(&to_world, 1)))->wait(kTimeout);
    group_recv->wait(kTimeout);
    world_recv->wait(kTimeout);
    EXPECT_EQ(from_group, 100 + (world.rank() ^ 1));
    EXPECT_EQ(from_world, 200 + (world.rank() ^ 1));
  });
}

TEST(TransportSplitTest, NegativeColorIsRefused) {
  run_in_process(1, [](Transport& world) {
    EXPECT_THROW(world.split(-1, 0, kTimeout), InvalidArgument);
  });
}

TEST(TransportSplitTest, ARankThatNeverSplitsTimesTheOthersOut) {
  LocalWorld world(2);
  auto first = world.transport(0);
  auto second = world.transport(1);
  EXPECT_THROW(first->split(0, 0, std::chrono::milliseconds(50)), TimeoutError);
}

TEST(TransportSplitTest, InProcessRanksAreTheirOwnHosts) {
  run_in_process(3, [](Transport& world) { EXPECT_EQ(world.host_key(kTimeout), world.rank()); });
}

}  // namespace
}  // namespace qccl
