// Every sparsifier spec through its three operations — allreduce mean,
// reduce-scatter mean, allgather — on ranks {1,2,3,4,7}, sizes
// {0,1,10,1000,100000}, ring and halving-doubling (check_codec_operation:
// within the bound where there is one, bitwise identical across ranks, a
// reduce-scatter block equal to the allreduce's, unsupported operations
// refused by name); and each resuming exactly from a checkpoint over a
// layout of several tensors.
#include <gtest/gtest.h>

#include <tuple>

#include "../support/codec_checks.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/codec_registry.h"

namespace qccl::test {
namespace {

const std::vector<std::string> kSparsifiers{
    "topk:ratio=0.01,ef=off",
    "topk:ratio=0.01,ef=on",
    "randk:ratio=0.01,scale=none,ef=on",
    "randk:ratio=0.01,scale=unbiased,ef=off",
    "randk:ratio=0.01,scale=none,ef=off",
    "dgc:ratio=0.01,momentum=0.9,clip=off,warmup=0,sample=0.01",
    "dgc:ratio=0.05,momentum=0.8,clip=1,warmup=3,sample=0.1"};

using Param = std::tuple<std::string, CodecOperation, int>;  // codec, operation, ranks
class SparseCodecOperationTest : public ::testing::TestWithParam<Param> {};

TEST_P(SparseCodecOperationTest, AgreesWithTheExactResultOnEverySizeAndAlgorithm) {
  const auto& [spec, operation, ranks] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    for (std::size_t count : {0, 1, 10, 1000, 100000}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        check_codec_operation(comm, spec, operation, count, algorithm);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    Sparsifiers, SparseCodecOperationTest,
    ::testing::Combine(::testing::ValuesIn(kSparsifiers),
                       ::testing::Values(CodecOperation::allreduce_mean,
                                         CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather),
                       ::testing::Values(1, 2, 3, 4, 7)),
    [](const ::testing::TestParamInfo<Param>& info) {
      return test_name(std::get<0>(info.param) + "_" +
                       std::string(to_string(std::get<1>(info.param))) + "_n" +
                       std::to_string(std::get<2>(info.param)));
    });

class SparseCodecResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SparseCodecResumeTest, ResumesExactlyOverSeveralTensors) {
  const std::string& spec = GetParam();
  const std::vector<std::size_t> sizes{3, 1000, 1, 250, 0, 64};
  const bool stateful = make_codec(spec)->spec().find(",ef=on") != std::string::npos ||
                        spec.rfind("dgc", 0) == 0;
  run_world(3, [&](Communicator& comm) {
    check_codec_resumes_exactly(comm, spec, TensorLayout::of_sizes(sizes), 8, stateful);
  });
}

INSTANTIATE_TEST_SUITE_P(Sparsifiers, SparseCodecResumeTest, ::testing::ValuesIn(kSparsifiers),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return test_name(info.param);
                         });

}  // namespace
}  // namespace qccl::test
