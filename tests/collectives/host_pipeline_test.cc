// The hierarchical allreduce pipelined over parts (collectives/host_pipeline.h):
// how a vector is cut, the order and overlap of the two levels' steps, a
// failure of either level ending the call on every rank without a hang, and
// 8-bit Global-QSGD's bytes unchanged by the parts, and ranks that disagree
// on the parts refused (the exact fp32 sum, every codec's bound and each
// host's traffic in parts: hierarchical_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "../support/collective_checks.h"
#include "../support/host_shapes.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/host_pipeline.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

TEST(HostPipelinePartsTest, AboutThePartSizeAtMostTheCapOnTheGranularity) {
  const auto counts = [](const std::vector<Range>& parts) { return range_counts(parts); };
  EXPECT_EQ(counts(host_pipeline_parts(1000, 0, 1)), (std::vector<std::size_t>{1000}))
      << "0 bytes: one part";
  EXPECT_EQ(counts(host_pipeline_parts(1000, 4000, 1)), (std::vector<std::size_t>{1000}))
      << "exactly one part's worth";
  EXPECT_EQ(counts(host_pipeline_parts(1999, 4000, 1)), (std::vector<std::size_t>{1999}))
      << "shorter than two parts";
  EXPECT_EQ(host_pipeline_parts(3000, 4000, 1).size(), 3u);
  const std::size_t mib64 = std::size_t{16} << 20;  // elements of 64 MiB
  EXPECT_EQ(host_pipeline_parts(mib64, std::size_t{8} << 20, 1).size(), 8u);
  EXPECT_EQ(host_pipeline_parts(mib64, std::size_t{2} << 20, 1).size(), 32u);
  EXPECT_EQ(host_pipeline_parts(mib64, std::size_t{1} << 19, 1).size(), kMaxHostPipelineParts);
  const auto parts = host_pipeline_parts(100003, 4096, 48);
  std::size_t at = 0;
  for (const Range& part : parts) {
    EXPECT_EQ(part.first, at);
    EXPECT_EQ(part.first % 48, 0u) << "parts start on the reduction's granularity";
    at += part.count;
  }
  EXPECT_EQ(at, 100003u);
  EXPECT_EQ(parts.size(), kMaxHostPipelineParts);
}

TEST(HostPipelinePartsTest, OwnSlicesFollowEachOtherPartByPart) {
  const std::vector<Range> parts{{0, 10}, {10, 7}, {17, 0}};
  const HostPartSlices slices = host_part_slices(parts, 3, 1, 1);
  ASSERT_EQ(slices.slices.size(), 3u);
  EXPECT_EQ(range_counts(slices.slices[0]), (std::vector<std::size_t>{4, 3, 3}));
  EXPECT_EQ(range_counts(slices.own), (std::vector<std::size_t>{3, 2, 0}));
  EXPECT_EQ(slices.own[1].first, 3u);
  EXPECT_EQ(slices.own_total(), 5u);
}

// Every rank logs its steps. Across hosts a part goes only once the host has
// summed it, and is shared only once exchanged; the host's steps come in the
// one fixed order; and some exchange runs while the host sums the next part
// (the next sum is started before the exchange of the part before ends: the
// exchange waits for a flag the host's sum sets).
TEST(HostPipelineTest, LevelsOverlapInTheirOrder) {
  constexpr std::size_t kParts = 4;
  run_world(4, [&](Communicator& comm) {
    HostGroups& groups = comm.host_groups();
    std::mutex mutex;
    std::vector<std::string> log;
    const auto note = [&](std::string event) {
      std::lock_guard lock(mutex);
      log.push_back(std::move(event));
    };
    std::atomic<bool> next_summed{false};
    HostPipelineSteps steps{
        [&](std::size_t k) {
          note("sum " + std::to_string(k));
          if (k == 1) next_summed = true;
        },
        [&](std::size_t k) {
          note("across " + std::to_string(k));
          if (k == 0) {  // the host's thread sums part 1 meanwhile
            const auto deadline = deadline_after(kTestTimeout);
            while (!next_summed && Clock::now() < deadline) std::this_thread::yield();
            EXPECT_TRUE(next_summed.load()) << "part 1 was not summed during part 0's exchange";
          }
        },
        [&](std::size_t k) { note("share " + std::to_string(k)); }};
    run_host_pipeline(groups, kParts, steps, kTestTimeout);
    const auto at = [&](const std::string& event) {
      return std::find(log.begin(), log.end(), event) - log.begin();
    };
    std::vector<std::string> host_order;
    for (const auto& event : log) {
      if (event.rfind("across", 0) != 0) host_order.push_back(event);
    }
    EXPECT_EQ(host_order, (std::vector<std::string>{"sum 0", "sum 1", "share 0", "sum 2",
                                                    "share 1", "sum 3", "share 2", "share 3"}));
    for (std::size_t k = 0; k < kParts; ++k) {
      const std::string part = std::to_string(k);
      EXPECT_LT(at("sum " + part), at("across " + part));
      EXPECT_LT(at("across " + part), at("share " + part));
    }
  }, with_hosts(2));
}

// A failure of either level, on one rank, ends the call on that rank with
// its own error (not the other level's cancellation), promptly, and the
// other ranks' steps, whose peers stop, fail instead of waiting for ever.
TEST(HostPipelineTest, EitherLevelFailingEndsTheCallWithItsError) {
  constexpr Timeout kShortTimeout = std::chrono::milliseconds(500);
  for (const bool across_fails : {true, false}) {
    run_world(4, [&](Communicator& comm) {
      HostGroups& groups = comm.host_groups();
      const bool failing = comm.rank() == 1;
      HostPipelineSteps steps{
          [&](std::size_t k) {
            if (failing && !across_fails && k == 2) throw InvalidArgument("host step broke");
            std::vector<float> one(1, 1.0f);
            groups.local().transport().allreduce(std::as_writable_bytes(std::span<float>(one)),
                                                 DataType::f32, ReduceOp::sum, kShortTimeout);
          },
          [&](std::size_t k) {
            if (failing && across_fails && k == 1) throw InvalidArgument("exchange broke");
            std::vector<float> one(1, 1.0f);
            groups.across().transport().allreduce(std::as_writable_bytes(std::span<float>(one)),
                                                  DataType::f32, ReduceOp::sum, kShortTimeout);
          },
          [&](std::size_t) {}};
      const auto start = Clock::now();
      try {
        run_host_pipeline(groups, 4, steps, kShortTimeout);
        ADD_FAILURE() << "rank " << comm.rank() << " finished a call that failed";
      } catch (const InvalidArgument& e) {
        EXPECT_TRUE(failing) << e.what();
        EXPECT_EQ(std::string(e.what()), across_fails ? "exchange broke" : "host step broke");
      } catch (const Error& e) {
        EXPECT_FALSE(failing) << "rank 1 must see its own error, got: " << e.what();
      }
      // A failing rank's peers time out, and theirs after them: a few
      // timeouts, not kTestTimeout.
      EXPECT_LT(seconds_since(start), 6 * std::chrono::duration<double>(kShortTimeout).count());
    });
  }
}

// 8-bit Global-QSGD in parts gives the bytes it gives in one part: its
// encoding is keyed by the element's place in the whole vector, and its
// sums across hosts are of integers, exact in any order. (4-bit codes are
// averaged and requantized at each hop, keyed by the rank that reduces
// them, and which rank that is depends on the cut; every codec's bound in
// parts: hierarchical_test.cc.)
TEST(PipelinedCodecTest, EightBitGlobalQsgdGivesTheSameBytesInParts) {
  constexpr std::size_t kCount = 20011;
  for (const HostShape& shape : {HostShape{4, 2}, HostShape{6, 3}, HostShape{8, 4}}) {
    run_world(std::get<0>(shape), [&](Communicator& comm) {
      const auto input = make_vector(kCount, [&](std::size_t i) { return noise(comm.rank(), i); });
      const auto mean = [&](std::size_t part_bytes) {
        auto codec = make_codec("global-qsgd:bits=8", {.seed = 17, .bucket = 3});
        CollectiveOptions options;
        options.algorithm = Algorithm::hierarchical;
        options.chunk_bytes = 4096;
        options.host_part_bytes = part_bytes;
        auto data = input;
        codec->allreduce_mean(comm, data, options);
        return data;
      };
      const auto in_parts = mean(8192);  // 3 parts
      const auto whole = mean(0);
      expect_identical_across_ranks(comm, in_parts);
      EXPECT_EQ(std::memcmp(in_parts.data(), whole.data(), kCount * sizeof(float)), 0)
          << host_shape_name(shape) << ": the parts changed the result";
    }, with_hosts(std::get<1>(shape)));
  }
}

// Ranks that cut the vector differently would call the levels' collectives
// different numbers of times: refused before any data moves, on every rank.
TEST(PipelinedMismatchTest, DifferentPartSizesAreRefusedOnEveryRank) {
  const std::string fp32 = expect_throw_on_every_rank<MismatchError>(4, [](Communicator& comm) {
    std::vector<float> data(5000, 1.0f);
    Fp32Sum sum;
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    options.host_part_bytes = comm.rank() == 3 ? 2048 : 4096;
    allreduce(comm, data, sum, options);
  }, with_hosts(2));
  EXPECT_NE(fp32.find("host part bytes"), std::string::npos) << fp32;
  const std::string codec = expect_throw_on_every_rank<MismatchError>(4, [](Communicator& comm) {
    auto gq = make_codec("global-qsgd:bits=8", {.seed = 1});
    std::vector<float> data(5000, 1.0f);
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    options.host_part_bytes = comm.rank() == 0 ? 0 : 4096;
    gq->allreduce_mean(comm, data, options);
  }, with_hosts(2));
  EXPECT_NE(codec.find("in parts of"), std::string::npos) << codec;
}

}  // namespace
}  // namespace qccl::test
