// The collective checks on the MPI transport. ctest runs this binary under
// mpirun with 2 and 4 ranks; every rank runs every test, and the exit code
// is the worst over the ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/stream_checks.h"
#include "../support/test_names.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/common/errors.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::test {
namespace {

// The job's transport and communicator, set up by main() before the tests.
struct MpiWorld {
  Transport* transport = nullptr;
  Communicator* comm = nullptr;
};
MpiWorld& world() {
  static MpiWorld w;
  return w;
}

using Param = std::tuple<std::size_t, Algorithm, bool, std::size_t>;
class MpiAllreduceTest : public ::testing::TestWithParam<Param> {
 protected:
  CollectiveCase c() const {
    const auto [count, algorithm, in_place, chunk] = GetParam();
    return {count, algorithm, in_place, chunk};
  }
};

TEST_P(MpiAllreduceTest, Fp32SumEqualsClosedFormOnEveryRank) {
  check_allreduce_fp32(*world().comm, c());
}

// Ring and tree only: native is MPI's own fp32 algorithm.
class MpiEncodedAllreduceTest : public MpiAllreduceTest {};

TEST_P(MpiEncodedAllreduceTest, OrderDependentSumsAreBitwiseIdentical) {
  check_allreduce_noise(*world().comm, c());
}

TEST_P(MpiEncodedAllreduceTest, SparseReductionEqualsClosedForm) {
  check_allreduce_sparse(*world().comm, c());
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  return "len" + std::to_string(std::get<0>(info.param)) + "_" +
         test_name(std::string(to_string(std::get<1>(info.param)))) +
         (std::get<2>(info.param) ? "_inplace" : "_outofplace") + "_chunk" +
         std::to_string(std::get<3>(info.param));
}

const auto kSizes = ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{10},
                                      std::size_t{1000}, std::size_t{100000});
const auto kChunks = ::testing::Values(std::size_t{256}, std::size_t{1} << 20);

INSTANTIATE_TEST_SUITE_P(SizesAlgorithms, MpiAllreduceTest,
                         ::testing::Combine(kSizes,
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling,
                                                              Algorithm::native),
                                            ::testing::Bool(), kChunks),
                         name);
INSTANTIATE_TEST_SUITE_P(SizesAlgorithms, MpiEncodedAllreduceTest,
                         ::testing::Combine(kSizes,
                                            ::testing::Values(Algorithm::ring, Algorithm::halving_doubling),
                                            ::testing::Bool(), kChunks),
                         name);

using SizeAlgorithm = std::tuple<std::size_t, Algorithm>;
class MpiCollectivesTest : public ::testing::TestWithParam<SizeAlgorithm> {
 protected:
  CollectiveCase c(bool in_place, std::size_t chunk) const {
    return {std::get<0>(GetParam()), std::get<1>(GetParam()), in_place, chunk};
  }
};

TEST_P(MpiCollectivesTest, ReduceScatter) { check_reduce_scatter(*world().comm, c(false, 256)); }
TEST_P(MpiCollectivesTest, Allgather) {
  check_allgather(*world().comm, c(false, 256));
  check_allgather(*world().comm, c(true, 1 << 20));
}
TEST_P(MpiCollectivesTest, Allgatherv) { check_allgatherv(*world().comm, c(false, 256)); }
TEST_P(MpiCollectivesTest, BroadcastFromEveryRoot) {
  if (std::get<1>(GetParam()) != Algorithm::ring) GTEST_SKIP() << "one broadcast algorithm";
  for (int root = 0; root < world().comm->size(); ++root) {
    check_broadcast(*world().comm, c(false, 256), root);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SizesAlgorithms, MpiCollectivesTest,
    ::testing::Combine(::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{10},
                                         std::size_t{1000}, std::size_t{100000}),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling,
                                         Algorithm::native)),
    [](const ::testing::TestParamInfo<SizeAlgorithm>& info) {
      return "len" + std::to_string(std::get<0>(info.param)) + "_" +
             test_name(std::string(to_string(std::get<1>(info.param))));
    });

// Every codec's three operations under mpirun (the checks of the in-process
// suite, codec_checks.h): within the error bound, identical on every rank.
using CodecOperationParam = std::tuple<std::string, CodecOperation, Algorithm>;
class MpiCodecOperationTest : public ::testing::TestWithParam<CodecOperationParam> {};

TEST_P(MpiCodecOperationTest, AgreesWithTheExactResult) {
  const auto& [spec, operation, algorithm] = GetParam();
  for (std::size_t count : {0, 1, 10, 1000, 100000}) {
    check_codec_operation(*world().comm, spec, operation, count, algorithm);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, MpiCodecOperationTest,
    ::testing::Combine(::testing::Values("fp32", "fp16", "global-qsgd", "global-qsgd:bits=4",
                                         "global-qsgd:dither=exp", "global-qsgd:norm=2", "qsgd",
                                         "qsgd:bits=4,norm=inf", "qgenx:bits=4,levels=qada,coding=huffman",
                                         "minmax:bits=4,rounding=shift",
                                         "intsgd", "intsgd-heuristic",
                                         "intdiana", "ef(global-qsgd:bits=4)", "terngrad",
                                         "terngrad:wire=2bit", "natural", "topk:ef=off",
                                         "topk", "randk", "randk:scale=unbiased,ef=off",
                                         "dgc", "signsgd", "signum", "ef-signsgd", "onebit",
                                         "powersgd"),
                       ::testing::Values(CodecOperation::allreduce_mean,
                                         CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
    [](const ::testing::TestParamInfo<CodecOperationParam>& info) {
      return test_name(std::get<0>(info.param) + "_" +
                       std::string(to_string(std::get<1>(info.param))) + "_" +
                       std::string(to_string(std::get<2>(info.param))));
    });

// The hierarchical allreduce on MPI communicators: the host found from
// shared memory (one machine: one host of every rank), and hosts of one
// and of two ranks as --ranks-per-host gives them.
TEST(MpiHierarchicalTest, SharedMemoryMakesOneHostOfThisMachine) {
  Communicator comm(*world().transport, {std::chrono::seconds(60), true});
  HostGroups& groups = comm.host_groups();
  EXPECT_EQ(groups.hosts(), 1);
  EXPECT_EQ(groups.local_size(), comm.size());
  EXPECT_EQ(groups.across().size(), 1);
}

class MpiHierarchicalShapeTest : public ::testing::TestWithParam<int> {
 protected:
  // 0: the layout MPI finds; otherwise this many ranks per host.
  CommunicatorOptions options() const {
    CommunicatorOptions o{std::chrono::seconds(60), true};
    o.ranks_per_host = GetParam();
    return o;
  }
  bool divides() const { return GetParam() == 0 || world().transport->size() % GetParam() == 0; }
};

TEST_P(MpiHierarchicalShapeTest, Fp32SumEqualsClosedForm) {
  if (!divides()) GTEST_SKIP() << "hosts of unequal size";
  Communicator comm(*world().transport, options());
  for (Algorithm between : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
    for (std::size_t count : {0, 1, 1001, 100000}) {
      CollectiveCase c{count, Algorithm::hierarchical, count % 2 == 1};
      c.between_hosts = between;
      check_allreduce_fp32(comm, c);
    }
  }
}

TEST_P(MpiHierarchicalShapeTest, GlobalQsgdIsIdenticalEverywhereAndWithinTheBound) {
  if (!divides()) GTEST_SKIP() << "hosts of unequal size";
  Communicator comm(*world().transport, options());
  auto codec = make_codec("global-qsgd:bits=8", {.seed = 3, .bucket = 1});
  CollectiveOptions o;
  o.algorithm = Algorithm::hierarchical;
  const int per_host = comm.host_groups().local_size();
  auto data = make_vector(100003, [&](std::size_t i) { return noise(comm.rank(), i); });
  std::vector<double> largest{local_norm(data, NormKind::inf)};
  allreduce_values<double>(comm.transport(), largest, ReduceOp::max, std::chrono::seconds(60));
  codec->allreduce_mean(comm, data, o);
  expect_identical_across_ranks(comm, data);
  const double bound = codec->hierarchical_error_bound(largest[0], comm.size() / per_host,
                                                       per_host, Algorithm::ring);
  for (std::size_t i = 0; i < data.size(); i += 97) {
    double exact = 0;
    for (int r = 0; r < comm.size(); ++r) exact += noise(r, i);
    ASSERT_LE(std::abs(data[i] - exact / comm.size()), bound) << "element " << i;
  }
}

TEST_P(MpiHierarchicalShapeTest, CodecReduceScatterAndAllgatherWithinTheBound) {
  if (!divides()) GTEST_SKIP() << "hosts of unequal size";
  Communicator comm(*world().transport, options());
  const int per_host = comm.host_groups().local_size(), hosts = comm.size() / per_host;
  CollectiveOptions o;
  o.algorithm = Algorithm::hierarchical;
  for (const std::string spec : {"global-qsgd:bits=4", "qsgd"}) {
    auto codec = make_codec(spec, {.seed = 5, .bucket = 2});
    auto input = make_vector(20011, [&](std::size_t i) { return noise(comm.rank(), i); });
    std::vector<double> statistic{local_norm_statistic(input, codec->norm_kind())};
    const bool inf = codec->norm_kind() == NormKind::inf;
    allreduce_values<double>(comm.transport(), statistic, inf ? ReduceOp::max : ReduceOp::sum,
                             std::chrono::seconds(60));
    const double norm = inf ? statistic[0] : std::sqrt(statistic[0]);
    const auto blocks = codec->reduce_scatter_blocks(input.size(), comm.size());
    const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
    std::vector<float> block(mine.count);
    codec->reduce_scatter_mean(comm, input, block, o);
    const double mean_bound = codec->hierarchical_error_bound(
        norm, hosts, per_host, Algorithm::ring, CodecOperation::reduce_scatter_mean);
    for (std::size_t i = 0; i < mine.count; i += 13) {
      double exact = 0;
      for (int r = 0; r < comm.size(); ++r) exact += noise(r, mine.first + i);
      ASSERT_LE(std::abs(block[i] - exact / comm.size()), mean_bound) << spec;
    }
    std::vector<float> gathered(input.size() * static_cast<std::size_t>(comm.size()));
    codec->allgather(comm, input, gathered, o);
    expect_identical_across_ranks(comm, gathered);
    const double shard_bound = codec->hierarchical_error_bound(norm, hosts, per_host,
                                                               Algorithm::ring,
                                                               CodecOperation::allgather);
    for (std::size_t j = 0; j < gathered.size(); j += 17) {
      const int owner = static_cast<int>(j / input.size());
      ASSERT_LE(std::abs(gathered[j] - noise(owner, j % input.size())), shard_bound) << spec;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RanksPerHost, MpiHierarchicalShapeTest, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("from_shared_memory")
                                                  : "per_host" + std::to_string(info.param);
                         });

// Two streams, each its own MPI communicator, in flight at once
// (stream_checks.h).
TEST(MpiStreamTest, TwoStreamsInFlightCompleteWithoutCrosstalk) {
  check_two_streams_in_flight(*world().comm, 5000, 30001, std::chrono::seconds(60));
}

// Sparse aggregation under mpirun: the same bits as the dense allreduce.
TEST(MpiSparseTest, SparseEqualsDenseOnEveryRank) {
  Communicator& comm = *world().comm;
  auto input = make_vector(30000, [&](std::size_t i) {
    return (i + 31 * static_cast<std::size_t>(comm.rank())) % 101 == 0 ? noise(comm.rank(), i) : 0.0f;
  });
  auto dense = input, sparse = input;
  make_codec("global-qsgd", {.seed = 6})->allreduce_mean(comm, dense);
  make_codec("global-qsgd:sparse=auto", {.seed = 6})->allreduce_mean(comm, sparse);
  EXPECT_EQ(sparse, dense);
  expect_identical_across_ranks(comm, sparse);
}

// With a support on every rank the entries arrive in one round, into room
// for each rank's support (MPI receives shorter than their buffers): still
// the dense allreduce's bits.
TEST(MpiSparseTest, SparseWithASupportEqualsDenseOnEveryRank) {
  Communicator& comm = *world().comm;
  constexpr std::size_t kRow = 16, kRows = 2000;
  std::vector<float> input(kRows * kRow, 0.0f);
  std::vector<Range> support;
  for (std::size_t row = static_cast<std::size_t>(comm.rank()); row < kRows; row += 37) {
    support.push_back({row * kRow, kRow});
    for (std::size_t j = 0; j < kRow; ++j) input[row * kRow + j] = noise(comm.rank(), row * kRow + j);
  }
  auto dense = input, sparse = input;
  make_codec("global-qsgd", {.seed = 8})->allreduce_mean(comm, dense);
  make_codec("global-qsgd:sparse=auto", {.seed = 8})->allreduce_mean_sparse(comm, sparse, support);
  EXPECT_EQ(sparse, dense);
  expect_identical_across_ranks(comm, sparse);
}

TEST(MpiFailureTest, LengthMismatchRaisesOnEveryRankAndCommunicatorStaysUsable) {
  Communicator& comm = *world().comm;
  Fp32Sum sum;
  std::vector<float> data(comm.rank() == comm.size() - 1 ? 7 : 8, 1.0f);
  try {
    allreduce(comm, data, sum);
    ADD_FAILURE() << "mismatched lengths were accepted";
  } catch (const MismatchError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("element count"));
  }
  std::vector<float> good(8, 1.0f);
  allreduce(comm, good, sum);
  EXPECT_EQ(good, std::vector<float>(8, static_cast<float>(comm.size())));
}

TEST(MpiFailureTest, UnmatchedReceiveTimesOutAndIsCancelled) {
  Transport& t = *world().transport;
  std::vector<int> buffer(4);
  const int peer = (t.rank() + 1) % t.size();
  {
    auto r = t.irecv(peer, 0, std::as_writable_bytes(std::span(buffer)));
    try {
      r->wait(std::chrono::milliseconds(200));
      ADD_FAILURE() << "a receive completed with no matching send";
    } catch (const TimeoutError& e) {
      EXPECT_THAT(std::string(e.what()),
                  ::testing::HasSubstr("receive from rank " + std::to_string(peer)));
    }
  }  // the destructor cancels the receive
  t.barrier(std::chrono::seconds(30));
}

}  // namespace
}  // namespace qccl::test

int main(int argc, char** argv) {
  qccl::MpiRuntime runtime(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  auto transport = runtime.world_transport();
  qccl::Communicator comm(*transport, {std::chrono::seconds(60), true});
  qccl::test::world() = {transport.get(), &comm};
  if (transport->rank() != 0) {
    // One rank reports progress; every rank still reports its failures.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  std::vector<std::int64_t> failed{RUN_ALL_TESTS() != 0 ? 1 : 0};
  qccl::allreduce_values<std::int64_t>(*transport, failed, qccl::ReduceOp::max,
                                       std::chrono::seconds(60));
  return failed[0] != 0 ? 1 : 0;
}
