// The call check's allreduce of a few integers, on both of its algorithms
// (one direct round up to 16 ranks, recursive doubling with folding beyond):
// MAX and SUM against their closed forms, identical on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../support/world.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/collectives/small_allreduce.h"

namespace qccl::test {
namespace {

std::int64_t value(int rank, std::size_t i) {
  return (static_cast<std::int64_t>(rank) * 7919 + static_cast<std::int64_t>(i) * 104729) % 1000003 -
         500000;
}

class SmallAllreduceTest : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(SmallAllreduceTest, MaxAndSumEqualTheirClosedForms) {
  const auto [ranks, length] = GetParam();
  run_world(ranks, [&, ranks = ranks, length = length](Communicator& comm) {
    for (const ReduceOp op : {ReduceOp::max, ReduceOp::sum}) {
      std::vector<std::int64_t> values(length);
      for (std::size_t i = 0; i < length; ++i) values[i] = value(comm.rank(), i);
      run_collective(comm, Fingerprint("small allreduce test"), kTestTimeout, [&](int tag) {
        small_allreduce(comm, tag, values, op, kTestTimeout, "small allreduce test");
      });
      for (std::size_t i = 0; i < length; ++i) {
        std::int64_t expected = value(0, i);
        for (int q = 1; q < ranks; ++q) {
          expected = op == ReduceOp::max ? std::max(expected, value(q, i)) : expected + value(q, i);
        }
        ASSERT_EQ(values[i], expected) << "element " << i << (op == ReduceOp::max ? " (max)" : " (sum)");
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(RanksLengths, SmallAllreduceTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 16, 17, 24),
                                            ::testing::Values(std::size_t{1}, std::size_t{13})),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace qccl::test
