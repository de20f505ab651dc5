// The allgather of raw bytes and of counts, on both algorithms (one direct
// round up to 16 ranks, the ring and recursive doubling beyond): every rank
// ends with every rank's count and bytes, in rank order, whatever the sizes
// (empty parts too), and a part of another size than the counts say is an
// error, not a hang. Parts the ranks only bound arrive in one round with
// their sizes; a part beyond its room is an error too.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "../support/world.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/direct_gather.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// Rank r's part: sizes that differ per rank, some empty, one large enough
// to leave the transports' small-message path.
std::size_t part_size(int rank, int scale) {
  return static_cast<std::size_t>(((rank * 37 + 5) % 11) % 4 == 0 ? 0 : ((rank * 37 + 5) % 11) * scale);
}

std::byte part_byte(int rank, std::size_t i) {
  return static_cast<std::byte>((rank * 131 + static_cast<int>(i % 251) * 7) & 0xFF);
}

void check_gather(Communicator& comm, int scale) {
  const int n = comm.size();
  std::vector<std::byte> mine(part_size(comm.rank(), scale));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = part_byte(comm.rank(), i);
  std::vector<std::size_t> counts;
  std::vector<std::byte> all;
  run_collective(comm, Fingerprint("allgather bytes test"), kTestTimeout, [&](int tag) {
    counts = allgather_counts_body(comm, tag, mine.size(), kTestTimeout);
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    all.assign(total, std::byte{0xEE});
    allgatherv_bytes_body(comm, tag, mine, counts, all, CollectiveOptions{});
  });
  ASSERT_EQ(counts.size(), static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (int q = 0; q < n; ++q) {
    ASSERT_EQ(counts[static_cast<std::size_t>(q)], part_size(q, scale)) << "rank " << q << "'s count";
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(q)]; ++i, ++at) {
      ASSERT_EQ(all[at], part_byte(q, i)) << "rank " << comm.rank() << ": byte " << i << " of rank " << q;
    }
  }
}

class AllgatherBytesTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AllgatherBytesTest, GivesEveryRankEveryPartInRankOrder) {
  const auto [ranks, scale] = GetParam();
  run_world(ranks, [&, scale = scale](Communicator& comm) {
    check_gather(comm, scale);
    check_gather(comm, scale);  // again on the next call's tag
  });
}

INSTANTIATE_TEST_SUITE_P(RanksSizes, AllgatherBytesTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 17),
                                            ::testing::Values(1, 13, 40000)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_scale" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Every rank knows a bound on every part (its size plus a margin that
// differs per rank), not the part's size: one round brings every part to
// the start of its room, and its size.
void check_gather_within(Communicator& comm, int scale) {
  const int n = comm.size();
  const auto room = [scale](int q) { return part_size(q, scale) + static_cast<std::size_t>(q % 3) * 5; };
  std::vector<std::byte> mine(part_size(comm.rank(), scale));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = part_byte(comm.rank(), i);
  std::vector<std::size_t> capacities;
  for (int q = 0; q < n; ++q) capacities.push_back(room(q));
  std::size_t total = 0;
  for (std::size_t c : capacities) total += c;
  std::vector<std::byte> all(total, std::byte{0xEE});
  std::vector<std::size_t> sizes;
  run_collective(comm, Fingerprint("bounded gather test"), kTestTimeout, [&](int tag) {
    sizes = allgatherv_bytes_within(comm, tag, mine, capacities, all, kTestTimeout, "test");
  });
  ASSERT_EQ(sizes.size(), static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (int q = 0; q < n; ++q) {
    ASSERT_EQ(sizes[static_cast<std::size_t>(q)], part_size(q, scale)) << "rank " << q << "'s size";
    for (std::size_t i = 0; i < sizes[static_cast<std::size_t>(q)]; ++i) {
      ASSERT_EQ(all[at + i], part_byte(q, i)) << "rank " << comm.rank() << ": byte " << i << " of rank " << q;
    }
    at += room(q);
  }
}

class AllgatherWithinBoundsTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AllgatherWithinBoundsTest, GivesEveryRankEveryPartAndItsSizeInOneRound) {
  const auto [ranks, scale] = GetParam();
  run_world(ranks, [&, scale = scale](Communicator& comm) {
    check_gather_within(comm, scale);
    check_gather_within(comm, scale);
  });
}

INSTANTIATE_TEST_SUITE_P(RanksSizes, AllgatherWithinBoundsTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7),
                                            ::testing::Values(1, 13, 40000)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_scale" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(AllgatherWithinBoundsTest, APartBeyondItsRoomIsAnError) {
  std::atomic<int> raised{0};
  run_world(2, [&](Communicator& comm) {
    // Rank 0 sends 8 bytes; rank 1 is told rank 0's part has room for 6.
    const std::vector<std::size_t> capacities =
        comm.rank() == 0 ? std::vector<std::size_t>{8, 2} : std::vector<std::size_t>{6, 2};
    std::vector<std::byte> mine(comm.rank() == 0 ? 8 : 2);
    std::vector<std::byte> all(capacities[0] + capacities[1]);
    try {
      run_collective(comm, Fingerprint("bounded gather test"), kTestTimeout, [&](int tag) {
        allgatherv_bytes_within(comm, tag, mine, capacities, all, kTestTimeout, "test");
      });
    } catch (const CommError&) {
      ++raised;
    }
  });
  EXPECT_EQ(raised.load(), 1) << "only rank 1 received a part beyond its room";
}

TEST(AllgatherWithinBoundsTest, ALocalPartBeyondItsRoomIsRefused) {
  run_world(1, [](Communicator& comm) {
    std::vector<std::byte> mine(5), all(4);
    const std::vector<std::size_t> capacities{4};
    run_collective(comm, Fingerprint("bounded gather test"), kTestTimeout, [&](int tag) {
      EXPECT_THROW(allgatherv_bytes_within(comm, tag, mine, capacities, all, kTestTimeout, "test"),
                   InvalidArgument);
    });
  });
}

TEST(AllgatherBytesTest, APartOfAnotherSizeThanItsCountIsAnError) {
  std::atomic<int> raised{0};
  std::string message;
  run_world(2, [&](Communicator& comm) {
    // Rank 0 sends 4 bytes; rank 1 is told rank 0's part has 6.
    const std::vector<std::size_t> counts =
        comm.rank() == 0 ? std::vector<std::size_t>{4, 2} : std::vector<std::size_t>{6, 2};
    std::vector<std::byte> mine(counts[static_cast<std::size_t>(comm.rank())]);
    std::vector<std::byte> all(counts[0] + counts[1]);
    try {
      run_collective(comm, Fingerprint("direct gather test"), kTestTimeout, [&](int tag) {
        allgatherv_bytes_direct(comm, tag, mine, counts, all, kTestTimeout, "direct gather test");
      });
    } catch (const CommError& e) {
      ++raised;
      message = e.what();
    }
  });
  EXPECT_EQ(raised.load(), 1) << "only rank 1 received a part of the wrong size";
  EXPECT_NE(message.find("received 4 bytes from rank 0 where its part has 6"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace qccl::test
