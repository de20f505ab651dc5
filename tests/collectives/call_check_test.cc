// The call check with folded statistics: every rank learns every rank's
// statistics in the same exchange that compares the calls, a codec step makes
// one latency-bound exchange before its data moves (three before this
// existed), and disagreements are still named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/counting_transport.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/call_check.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

// MAX-combine buffers the way the transport does.
std::vector<std::int64_t> combine(const std::vector<std::vector<std::int64_t>>& buffers) {
  auto out = buffers.front();
  for (const auto& b : buffers) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], b[i]);
  }
  return out;
}

TEST(CallCheckTest, EveryRankLearnsEveryRanksStatisticsExactly) {
  const int n = 3;
  const double values[] = {1.5, -0.0, 2.25e-300};
  std::vector<std::vector<std::int64_t>> buffers;
  Fingerprint fingerprint("op");
  fingerprint.add("count", 7);
  for (int r = 0; r < n; ++r) {
    CallStatistics s;
    s.maximum = {values[r], -static_cast<double>(r + 1)};
    s.per_rank = {values[r] * 3, 1.0 / (r + 1)};
    s.finite = r != 1;
    buffers.push_back(call_check_buffer(&fingerprint, &s, n, r));
    // The size depends on the rank count only.
    EXPECT_EQ(buffers.back().size(), call_check_buffer(nullptr, nullptr, n, r).size());
  }
  const auto exchanged = combine(buffers);
  EXPECT_TRUE(fingerprints_agree(exchanged));
  const auto gathered = gathered_statistics(exchanged, n);
  // Rank 1's data is not finite: its statistics are left out of the maxima.
  EXPECT_EQ(gathered.maximum[0], 1.5);
  EXPECT_EQ(gathered.maximum[1], -1.0);  // order-preserving for negative values too
  EXPECT_EQ(gathered.nonfinite_ranks, std::vector<int>{1});
  EXPECT_EQ(gathered.per_rank[0][0], 4.5);
  EXPECT_EQ(gathered.per_rank[2][0], 2.25e-300 * 3);
  EXPECT_EQ(gathered.per_rank[2][1], 1.0 / 3);
  EXPECT_EQ(gathered.sum(1), 1.0 + 0.0 + 1.0 / 3);  // rank 1 contributes 0

  Fingerprint other("op");
  other.add("count", 8);
  buffers[2] = call_check_buffer(&other, nullptr, n, 2);
  EXPECT_FALSE(fingerprints_agree(combine(buffers)));
}

TEST(CallCheckTest, StatisticsTravelWithTheCallAndNonFiniteRanksAreNamed) {
  run_world(4, [](Communicator& comm) {
    CallStatistics s;
    s.maximum[0] = comm.rank() * 1.5;
    s.per_rank[0] = comm.rank() + 1.0;
    s.finite = comm.rank() != 2;
    Fingerprint fingerprint("test call");
    const CollectiveCall call(comm, fingerprint, kTestTimeout, &s);
    EXPECT_EQ(call.statistics().maximum[0], 4.5);
    EXPECT_EQ(call.statistics().sum(0), 1.0 + 2.0 + 0.0 + 4.0);
    EXPECT_EQ(call.statistics().nonfinite_ranks, std::vector<int>{2});
  });
}

// Before the folding a compressed step made three latency-bound exchanges:
// the norm's call check, the norm, the data's call check. Now the norm and
// the non-finite flags travel in the step's call check, and nothing else
// latency-bound (no transport-level collective either) precedes the data.
TEST(CallCheckTest, ACodecStepMakesOneExchangeBeforeItsDataMoves) {
  for (const char* spec : {"global-qsgd", "global-qsgd:norm=2", "fp16", "fp32", "qsgd",
                           "ef(global-qsgd:bits=4)", "intsgd-heuristic"}) {
    run_in_process(3, [&](Transport& inner) {
      CountingTransport counting(inner);
      Communicator comm(counting, {kTestTimeout, true});
      auto codec = make_codec(spec);
      auto data = make_vector(1000, [&](std::size_t i) { return noise(comm.rank(), i); });
      codec->allreduce_mean(comm, data);
      EXPECT_EQ(comm.exchanges(), 1u) << spec;
      const auto blocks = codec->reduce_scatter_blocks(1000, 3);
      std::vector<float> block(blocks[static_cast<std::size_t>(comm.rank())].count);
      codec->reduce_scatter_mean(comm, data, block);
      EXPECT_EQ(comm.exchanges(), 2u) << spec;
      EXPECT_EQ(counting.exchanges(), 0) << spec;
    });
  }
  // Without the argument check a codec still exchanges its statistics, once;
  // a plain unchecked call exchanges nothing before its data.
  run_world(
      2,
      [](Communicator& comm) {
        auto data = make_vector(100, [&](std::size_t i) { return noise(comm.rank(), i); });
        make_codec("global-qsgd")->allreduce_mean(comm, data);
        EXPECT_EQ(comm.exchanges(), 1u);
        Fp32Sum sum;
        allreduce(comm, data, sum);
        EXPECT_EQ(comm.exchanges(), 1u);
      },
      {kTestTimeout, false});
}

TEST(CallCheckTest, AStepOnOtherDataOrAnotherCodecIsStillAMismatch) {
  auto message = expect_throw_on_every_rank<MismatchError>(3, [](Communicator& comm) {
    std::vector<float> data(comm.rank() == 1 ? 99 : 100, 1.0f);
    make_codec("global-qsgd")->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, HasSubstr("allreduce mean: ranks disagree on 'element count'"));
  EXPECT_THAT(message, HasSubstr("ranks {1} have 99"));
  message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    std::vector<float> data(10, 1.0f), block(5);
    auto codec = make_codec("fp16");
    if (comm.rank() == 0) {
      codec->allreduce_mean(comm, data);
    } else {
      codec->reduce_scatter_mean(comm, data, block);
    }
  });
  EXPECT_THAT(message, HasSubstr("'operation'"));
  // The communicator stays usable after a mismatch (no data moved).
  run_world(2, [](Communicator& comm) {
    std::vector<float> bad(comm.rank() == 0 ? 5 : 6, 1.0f);
    auto codec = make_codec("fp16");
    EXPECT_THROW(codec->allreduce_mean(comm, bad), MismatchError);
    std::vector<float> good(6, static_cast<float>(comm.rank()));
    codec->allreduce_mean(comm, good);
    EXPECT_EQ(good, std::vector<float>(6, 0.5f));
  });
}

}  // namespace
}  // namespace qccl::test
