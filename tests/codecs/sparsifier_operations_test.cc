// Every sparsifier spec resuming exactly from a checkpoint over a layout of
// several tensors (their operations over ranks, sizes and algorithms are in
// codec_operations_test.cc).
#include <gtest/gtest.h>

#include "../support/codec_checks.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"

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
