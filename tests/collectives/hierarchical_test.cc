// The hierarchical allreduce (collectives/hierarchical.h): host layouts, the
// exact fp32 result (in one part and pipelined in parts) and the codecs'
// means on ranks {1,2,3,4,7} and more in hosts of every size that divides
// them, identical bytes on every rank, each host's traffic across hosts,
// and clear refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <tuple>

#include "../support/collective_checks.h"
#include "../support/host_shapes.h"
#include "../support/patterns.h"
#include "../support/sparse_test_reduction.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

TEST(HostLayoutTest, ConsecutiveGroupsAndTheirDescription) {
  const HostLayout even = HostLayout::consecutive(6, 3);
  EXPECT_EQ(even.hosts(), 2);
  EXPECT_TRUE(even.uniform());
  EXPECT_EQ(even.host_of(4), 1);
  EXPECT_EQ(even.local_rank(4), 1);
  EXPECT_EQ(even.describe(), "2 hosts x 3 ranks");
  EXPECT_NO_THROW(even.check_uniform("x"));

  const HostLayout uneven = HostLayout::consecutive(7, 2);
  EXPECT_EQ(uneven.hosts(), 4);
  EXPECT_FALSE(uneven.uniform());
  EXPECT_EQ(uneven.host_size(3), 1);
  EXPECT_EQ(uneven.describe(), "4 hosts of 2, 2, 2, 1 ranks");
  try {
    uneven.check_uniform("the hierarchical algorithm");
    FAIL() << "an uneven layout passed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("4 hosts of 2, 2, 2, 1 ranks"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--ranks-per-host"), std::string::npos);
  }
  EXPECT_THROW(HostLayout::consecutive(4, 0), InvalidArgument);
}

TEST(HostLayoutTest, KeysNumberHostsByTheirLowestRank) {
  const std::vector<int> keys{5, 5, 9, 5, 9, 2};
  const HostLayout layout = HostLayout::from_keys(keys);
  EXPECT_EQ(layout.hosts(), 3);
  EXPECT_EQ((std::vector<int>{layout.host_of(0), layout.host_of(2), layout.host_of(5)}),
            (std::vector<int>{0, 1, 2}));
  EXPECT_EQ((std::vector<int>{layout.local_rank(0), layout.local_rank(1), layout.local_rank(3),
                              layout.local_rank(4)}),
            (std::vector<int>{0, 1, 2, 1}));
  EXPECT_EQ(layout.describe(), "3 hosts of 3, 2, 1 ranks");
}

TEST(HostGroupsTest, LevelsHoldTheHostAndOneRankPerHost) {
  run_world(6, [](Communicator& comm) {
    HostGroups& groups = comm.host_groups();
    EXPECT_EQ(&groups, &comm.host_groups()) << "made once";
    EXPECT_EQ(groups.hosts(), 3);
    EXPECT_EQ(groups.local_size(), 2);
    EXPECT_EQ(groups.host(), comm.rank() / 2);
    EXPECT_EQ(groups.local_rank(), comm.rank() % 2);
    EXPECT_EQ(groups.across().size(), 3);
    EXPECT_EQ(groups.across().rank(), comm.rank() / 2);
    // Sums within each level cover exactly its ranks.
    std::vector<std::int64_t> mine{comm.rank()};
    allreduce_values<std::int64_t>(groups.local().transport(), mine, ReduceOp::sum, kTestTimeout);
    EXPECT_EQ(mine[0], 4 * (comm.rank() / 2) + 1);
    std::vector<std::int64_t> across{comm.rank()};
    allreduce_values<std::int64_t>(groups.across().transport(), across, ReduceOp::sum,
                                   kTestTimeout);
    EXPECT_EQ(across[0], 6 + 3 * (comm.rank() % 2));
  }, with_hosts(2));
}

TEST(HostGroupsTest, InProcessRanksAreTheirOwnHostsUnlessTold) {
  run_world(3, [](Communicator& comm) {
    EXPECT_EQ(comm.host_groups().hosts(), 3);
    EXPECT_EQ(comm.host_groups().local_size(), 1);
  });
}

// (ranks, ranks per host): one host, hosts of one rank, and hosts of several
// ranks, from 1 to 8 ranks (12 shapes).
using Shape = HostShape;
const auto kShapes = ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{2, 2}, Shape{3, 1},
                                       Shape{3, 3}, Shape{4, 2}, Shape{4, 4}, Shape{6, 2},
                                       Shape{6, 3}, Shape{7, 1}, Shape{7, 7}, Shape{8, 4});
std::string shape_name(const Shape& s) { return host_shape_name(s); }

// In one part, and pipelined in parts of 1 KiB (host_pipeline.h: up to 64
// of them).
using Fp32Param = std::tuple<Shape, std::size_t, Algorithm, bool, std::size_t>;
class HierarchicalFp32Test : public ::testing::TestWithParam<Fp32Param> {};

TEST_P(HierarchicalFp32Test, SumEqualsClosedFormOnEveryRank) {
  const auto [shape, count, between, in_place, part_bytes] = GetParam();
  CollectiveCase c{count, Algorithm::hierarchical, in_place};
  c.between_hosts = between;
  c.host_part_bytes = part_bytes;
  run_world(std::get<0>(shape), [&](Communicator& comm) { check_allreduce_fp32(comm, c); },
            with_hosts(std::get<1>(shape)));
}

INSTANTIATE_TEST_SUITE_P(
    ShapesSizesBetween, HierarchicalFp32Test,
    ::testing::Combine(kShapes,
                       ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{1001},
                                         std::size_t{100000}),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling,
                                         Algorithm::native),
                       ::testing::Bool(), ::testing::Values(std::size_t{0}, std::size_t{1024})),
    [](const ::testing::TestParamInfo<Fp32Param>& info) {
      return shape_name(std::get<0>(info.param)) + "_len" +
             std::to_string(std::get<1>(info.param)) + "_" +
             test_name(std::string(to_string(std::get<2>(info.param)))) +
             (std::get<3>(info.param) ? "_inplace" : "_outofplace") +
             (std::get<4>(info.param) == 0 ? "_onepart" : "_parts1k");
    });

// A codec's mean across hosts: identical bytes everywhere, and within the
// codec's bound for H ranks of the exact mean, plus the fp32 rounding of
// the host means (L additions and a scaling, each within 2^-24 of a value
// at most L times the largest input). In one part and in parts of 4 KiB.
using CodecParam = std::tuple<std::string, Shape, Algorithm, std::size_t>;
class HierarchicalCodecTest : public ::testing::TestWithParam<CodecParam> {};

TEST_P(HierarchicalCodecTest, MeanIsIdenticalEverywhereAndWithinTheBound) {
  const auto [spec, shape, between, part_bytes] = GetParam();
  const auto [ranks, per_host] = shape;
  constexpr std::size_t kCount = 5003;
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 11, .bucket = 3});
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    options.between_hosts = between;
    options.chunk_bytes = 4096;  // several pipelined chunks per slice
    options.host_part_bytes = part_bytes;
    for (int step = 0; step < 2; ++step) {
      auto data = make_vector(kCount, [&](std::size_t i) { return noise(comm.rank() + 31 * step, i); });
      std::vector<double> statistic{local_norm_statistic(data, codec->norm_kind())};
      allreduce_values<double>(comm.transport(), statistic,
                               codec->norm_kind() == NormKind::inf ? ReduceOp::max : ReduceOp::sum,
                               kTestTimeout);
      const double norm =
          codec->norm_kind() == NormKind::inf ? statistic[0] : std::sqrt(statistic[0]);
      const double bound = codec->hierarchical_error_bound(norm, ranks / per_host, per_host, between);
      codec->allreduce_mean(comm, data, options);
      expect_identical_across_ranks(comm, data);
      double worst = 0;
      for (std::size_t i = 0; i < kCount; ++i) {
        double exact = 0;
        for (int r = 0; r < ranks; ++r) exact += noise(r + 31 * step, i);
        worst = std::max(worst, std::abs(data[i] - exact / ranks));
      }
      EXPECT_LE(worst, bound) << spec << " step " << step;
    }
  }, with_hosts(per_host));
}

INSTANTIATE_TEST_SUITE_P(
    CodecsShapes, HierarchicalCodecTest,
    ::testing::Combine(::testing::Values("fp32", "fp16", "global-qsgd:bits=8",
                                         "global-qsgd:bits=4",
                                         "global-qsgd:bits=8,dither=exp", "qsgd",
                                         "natural"),
                       ::testing::Values(Shape{2, 2}, Shape{4, 2}, Shape{6, 3}, Shape{7, 7},
                                         Shape{8, 2}),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling),
                       ::testing::Values(std::size_t{0}, std::size_t{4096})),
    [](const ::testing::TestParamInfo<CodecParam>& info) {
      return test_name(std::get<0>(info.param)) + "_" + shape_name(std::get<1>(info.param)) +
             "_" + test_name(std::string(to_string(std::get<2>(info.param)))) +
             (std::get<3>(info.param) == 0 ? "_onepart" : "_parts4k");
    });

// Reduce-scatter and allgather through a codec: each rank's block within
// the bound of the exact mean's; every rank's shards, identical everywhere,
// each within the codec's bound of the exact shard.
using OperationParam = std::tuple<std::string, Shape, CodecOperation>;
class HierarchicalOperationTest : public ::testing::TestWithParam<OperationParam> {};

TEST_P(HierarchicalOperationTest, WithinTheBoundAndIdenticalWhereShared) {
  const auto [spec, shape, operation] = GetParam();
  const auto [ranks, per_host] = shape;
  constexpr std::size_t kCount = 3001;  // per shard, or the whole vector
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 13, .bucket = 4});
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    options.chunk_bytes = 2048;
    const auto x = [](int rank, std::size_t i) { return noise(rank + 7, i); };
    auto input = make_vector(kCount, [&](std::size_t i) { return x(comm.rank(), i); });
    std::vector<double> statistic{local_norm_statistic(input, codec->norm_kind())};
    const bool inf = codec->norm_kind() == NormKind::inf;
    allreduce_values<double>(comm.transport(), statistic, inf ? ReduceOp::max : ReduceOp::sum,
                             kTestTimeout);
    const double norm = inf ? statistic[0] : std::sqrt(statistic[0]);
    const double bound = codec->hierarchical_error_bound(norm, ranks / per_host, per_host,
                                                         Algorithm::ring, operation);
    if (operation == CodecOperation::allgather) {
      std::vector<float> output(kCount * static_cast<std::size_t>(ranks));
      codec->allgather(comm, input, output, options);
      expect_identical_across_ranks(comm, output);
      for (std::size_t j = 0; j < output.size(); ++j) {
        const int owner = static_cast<int>(j / kCount);
        ASSERT_LE(std::abs(output[j] - x(owner, j % kCount)), bound) << "element " << j;
      }
      return;
    }
    const auto blocks = codec->reduce_scatter_blocks(kCount, ranks);
    const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
    std::vector<float> output(mine.count);
    codec->reduce_scatter_mean(comm, input, output, options);
    for (std::size_t i = 0; i < mine.count; ++i) {
      double exact = 0;
      for (int r = 0; r < ranks; ++r) exact += x(r, mine.first + i);
      ASSERT_LE(std::abs(output[i] - exact / ranks), bound) << "element " << mine.first + i;
    }
  }, with_hosts(per_host));
}

INSTANTIATE_TEST_SUITE_P(
    CodecsShapes, HierarchicalOperationTest,
    ::testing::Combine(::testing::Values("fp32", "fp16", "global-qsgd:bits=8",
                                         "global-qsgd:bits=4", "qsgd", "natural"),
                       ::testing::Values(Shape{1, 1}, Shape{2, 2}, Shape{4, 2}, Shape{6, 3},
                                         Shape{7, 1}, Shape{8, 4}),
                       ::testing::Values(CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather)),
    [](const ::testing::TestParamInfo<OperationParam>& info) {
      return test_name(std::get<0>(info.param)) + "_" + shape_name(std::get<1>(info.param)) +
             "_" + test_name(std::string(to_string(std::get<2>(info.param))));
    });

// Unbiased across hosts: Global-QSGD's dithering of the host means, keyed
// by host and element, averages to the exact mean (5 standard errors per
// element over 400 steps).
TEST(HierarchicalCodecTest, GlobalQsgdStaysUnbiased) {
  constexpr std::size_t kCount = 64;
  constexpr int kSteps = 400, kRanks = 4;
  std::vector<double> sum(kCount, 0.0), squares(kCount, 0.0);
  run_world(kRanks, [&](Communicator& comm) {
    auto codec = make_codec("global-qsgd:bits=4", {.seed = 5, .bucket = 0});
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    for (int step = 0; step < kSteps; ++step) {
      auto data = make_vector(kCount, [&](std::size_t i) { return noise(comm.rank(), i); });
      codec->allreduce_mean(comm, data, options);
      if (comm.rank() != 0) continue;
      for (std::size_t i = 0; i < kCount; ++i) {
        sum[i] += data[i];
        squares[i] += static_cast<double>(data[i]) * data[i];
      }
    }
  }, with_hosts(2));
  for (std::size_t i = 0; i < kCount; ++i) {
    double exact = 0;
    for (int r = 0; r < kRanks; ++r) exact += noise(r, i);
    exact /= kRanks;
    const double mean = sum[i] / kSteps;
    const double variance = std::max(squares[i] / kSteps - mean * mean, 0.0) * kSteps / (kSteps - 1);
    EXPECT_NEAR(mean, exact, 5 * std::sqrt(variance / kSteps) + 1e-6) << "element " << i;
  }
}

// Each host's card carries 2(H−1)/H of the vector per allreduce (its L
// ranks each send that share of their 1/L slice across hosts), against the
// flat ring's 2(n−1)/n from each of the ranks at a host boundary. In parts
// as in one: each rank then sends its parts' slices, whose sizes differ by
// the parts' rounding, and the host's ranks together the same bytes.
TEST(HierarchicalTrafficTest, EachHostSendsItsSlicesAcrossOnce) {
  constexpr std::size_t kCount = 120000;
  for (const std::size_t part_bytes : {std::size_t{0}, std::size_t{64 * 1024}}) {  // 1, 7 parts
    run_world(4, [&](Communicator& comm) {
      Fp32Sum sum;
      auto data = make_vector(kCount, [&](std::size_t i) { return pattern(comm.rank(), i); });
      CollectiveOptions options;
      options.algorithm = Algorithm::hierarchical;
      options.host_part_bytes = part_bytes;
      allreduce(comm, data, sum, options);
      HostGroups& groups = comm.host_groups();
      const std::uint64_t sent = groups.across().data_bytes_sent();
      EXPECT_EQ(comm.data_bytes_sent(), sent) << "the communicator counts its levels' data";
      if (part_bytes == 0) {
        EXPECT_EQ(sent, kCount / 2 * sizeof(float)) << "2(H-1)/H of a slice";
      }
      std::vector<std::int64_t> host_sent{static_cast<std::int64_t>(sent)};
      allreduce_values<std::int64_t>(groups.local().transport(), host_sent, ReduceOp::sum,
                                     kTestTimeout);
      EXPECT_EQ(host_sent[0], static_cast<std::int64_t>(kCount * sizeof(float)))
          << "2(H-1)/H of the vector from the host's ranks, H = 2; parts " << part_bytes;
    }, with_hosts(2));
  }
}

// Before any data moves, so the communicator stays usable.
TEST(HierarchicalRefusalTest, UnequalHostsAreRefusedOnEveryRank) {
  const std::string message = expect_throw_on_every_rank<InvalidArgument>(3, [](Communicator& comm) {
    std::vector<float> data(10, 1.0f);
    Fp32Sum sum;
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    try {
      allreduce(comm, data, sum, options);
    } catch (const InvalidArgument&) {
      EXPECT_FALSE(comm.poisoned());
      allreduce(comm, data, sum);  // the ring still runs
      EXPECT_EQ(data[0], 3.0f);
      throw;
    }
  }, with_hosts(2));
  EXPECT_NE(message.find("2 hosts of 2, 1 ranks"), std::string::npos) << message;
}

TEST(HierarchicalRefusalTest, CodecsThatSelectFromTheirOwnInputAreRefused) {
  for (const std::string spec : {"topk:ratio=0.1", "ef(global-qsgd:bits=8)", "intsgd"}) {
    const std::string message = expect_throw_on_every_rank<InvalidArgument>(
        2,
        [&](Communicator& comm) {
          auto codec = make_codec(spec, {});
          std::vector<float> data(16, 0.5f);
          CollectiveOptions options;
          options.algorithm = Algorithm::hierarchical;
          codec->allreduce_mean(comm, data, options);
        },
        with_hosts(1));
    EXPECT_NE(message.find("hierarchical"), std::string::npos) << spec << ": " << message;
  }
}

// The raw reduce-scatter runs one level; a reduction that is not exact fp32
// cannot take host sums; the second level cannot itself be hierarchical.
TEST(HierarchicalRefusalTest, RawReduceScatterAndInexactReductionsAreRefused) {
  run_world(2, [](Communicator& comm) {
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    std::vector<float> input(8, 1.0f), output(4);
    Fp32Sum sum;
    EXPECT_THROW(reduce_scatter(comm, input, output, sum, options), InvalidArgument);
    SparseTestReduction sparse;
    EXPECT_THROW(allreduce(comm, input, sparse, options), InvalidArgument);
    options.between_hosts = Algorithm::hierarchical;
    options.algorithm = Algorithm::ring;
    EXPECT_THROW(allreduce(comm, input, sum, options), InvalidArgument);
  });
}

}  // namespace
}  // namespace qccl::test
