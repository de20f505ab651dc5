// Correctness at scale, in process: 64, 256 and 1,024 ranks (threads) of
// every codec in the catalogue that offers an allreduce mean, through the
// ring, halving-doubling and the hierarchical algorithm (hosts of 8 ranks),
// on small vectors: every rank ends with the same bytes, within the codec's
// worst-case error of the exact mean (codec_checks.h) — Global-QSGD's
// integer headroom for 1,024 summed ranks included.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

constexpr std::size_t kCount = 96;  // not a multiple of most rank counts
constexpr int kRanksPerHost = 8;

// Each codec with its default parameters; a wrapper (error feedback), which
// has none, around Global-QSGD 4-bit.
std::vector<std::string> allreduce_codecs() {
  std::vector<std::string> specs;
  for (const auto& [name, description] : codec_catalog()) {
    std::string spec = name;
    try {
      make_codec(spec);
    } catch (const InvalidArgument&) {
      spec = name + "(global-qsgd:bits=4)";
    }
    if (make_codec(spec)->supports(CodecOperation::allreduce_mean)) specs.push_back(spec);
  }
  return specs;
}

CommunicatorOptions hosts_of_eight() {
  CommunicatorOptions options{std::chrono::seconds(120), true};
  options.ranks_per_host = kRanksPerHost;
  return options;
}

using ScaleParam = std::tuple<int, std::string>;
std::string scale_name(const ::testing::TestParamInfo<ScaleParam>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_" + test_name(std::get<1>(info.param));
}
class ScaleTest : public ::testing::TestWithParam<ScaleParam> {};

// The spec that runs on `ranks` ranks: `spec` itself, or — where its wire
// cannot sum that many ranks (IntSGD's and TernGrad's int8 wires hold 127)
// and it says so on every rank before anything moves — the wire its
// message names ("use wire=int32"). The refusal does not depend on the
// algorithm; halving-doubling's 2·log2(n) rounds keep the probe short
// (the ring's 2(n−1) thread hand-offs took about a third of a 1,024-rank
// case).
std::string spec_for_ranks(int ranks, const std::string& spec) {
  std::string advice;
  CollectiveOptions options;
  options.algorithm = Algorithm::halving_doubling;
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {});
    std::vector<float> data(kCount, 0.5f);
    try {
      codec->allreduce_mean(comm, data, options);
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      const auto at = message.find("use wire=");
      EXPECT_NE(at, std::string::npos) << spec << " refused " << ranks << " ranks: " << message;
      EXPECT_GT(ranks, 127) << message;
      if (comm.rank() == 0 && at != std::string::npos) advice = message.substr(at + 4);
    }
  }, {std::chrono::seconds(120), true});
  if (advice.empty()) return spec;
  return spec + (spec.find(':') == std::string::npos ? ":" : ",") + advice;
}

TEST_P(ScaleTest, EveryCodecOnEveryRankWithinItsBound) {
  const int ranks = std::get<0>(GetParam());
  const std::string spec = spec_for_ranks(ranks, std::get<1>(GetParam()));
  // The ring's 2(n−1) hops are thread hand-offs here: at 1,024 ranks
  // (seconds per codec) halving-doubling's 2·log2(n) alone.
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
    if (algorithm == Algorithm::ring && ranks > 256) continue;
    run_world(ranks, [&](Communicator& comm) {
      check_codec_operation(comm, spec, CodecOperation::allreduce_mean, kCount, algorithm);
    }, {std::chrono::seconds(120), true});
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ScaleTest,
                         ::testing::Combine(::testing::Values(64, 256, 1024),
                                            ::testing::ValuesIn(allreduce_codecs())),
                         scale_name);

// The codecs the hierarchical algorithm runs (CodecTraits::host_means).
std::vector<std::string> host_mean_codecs() {
  std::vector<std::string> specs;
  for (const std::string& spec : allreduce_codecs()) {
    if (make_codec(spec)->traits().host_means) specs.push_back(spec);
  }
  return specs;
}

// The hierarchical algorithm with the codecs it runs; hosts of 8 ranks.
class HierarchicalScaleTest : public ::testing::TestWithParam<ScaleParam> {};

TEST_P(HierarchicalScaleTest, MeanOnEveryRankWithinItsBound) {
  const auto& [ranks, spec] = GetParam();
  const int hosts = ranks / kRanksPerHost;
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 9, .bucket = 2});
    auto data = make_vector(kCount, [&](std::size_t i) { return noise(comm.rank(), i); });
    std::vector<double> statistic{local_norm_statistic(data, codec->norm_kind())};
    const bool inf = codec->norm_kind() == NormKind::inf;
    allreduce_values<double>(comm.transport(), statistic, inf ? ReduceOp::max : ReduceOp::sum,
                             comm.options().timeout);
    const double norm = inf ? statistic[0] : std::sqrt(statistic[0]);
    CollectiveOptions options;
    options.algorithm = Algorithm::hierarchical;
    options.between_hosts = Algorithm::halving_doubling;
    codec->allreduce_mean(comm, data, options);
    expect_identical_across_ranks(comm, data);
    const double bound =
        codec->hierarchical_error_bound(norm, hosts, kRanksPerHost, Algorithm::halving_doubling);
    for (std::size_t i = 0; i < kCount; ++i) {
      double exact = 0;
      for (int r = 0; r < ranks; ++r) exact += noise(r, i);
      ASSERT_LE(std::abs(data[i] - exact / ranks), bound) << spec << ", element " << i;
    }
  }, hosts_of_eight());
}

INSTANTIATE_TEST_SUITE_P(Ranks, HierarchicalScaleTest,
                         ::testing::Combine(::testing::Values(64, 256, 1024),
                                            ::testing::ValuesIn(host_mean_codecs())),
                         scale_name);

// fp32 through the hierarchical algorithm at 1,024 ranks: the exact sum.
TEST(ScaleFp32Test, HierarchicalSumIsExactOn1024Ranks) {
  run_world(1024, [](Communicator& comm) {
    CollectiveCase c{1000, Algorithm::hierarchical, true};
    c.between_hosts = Algorithm::ring;
    check_allreduce_fp32(comm, c);
  }, hosts_of_eight());
}

}  // namespace
}  // namespace qccl::test
