// Top-k and DGC over a merged group (MergeComp §4.1, Algorithm 1: a group is
// compressed as one tensor): select=group keeps the k largest of the whole
// group, across its tensors, on a hand-made group with the indices written
// out; select=tensor keeps each tensor's own k_t, the same as compressing
// each tensor alone; every rank ends with the same bits, on 1, 2, 3, 4 and
// 7 ranks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// A group of three tensors (4, 6 and 10 elements), magnitudes all distinct.
// At ratio 0.2 the group keeps k = 4: 9 (index 0), 8 (5), −7 (6), −6 (12).
// Per tensor it keeps ⌈0.8⌉ + ⌈1.2⌉ + ⌈2⌉ = 1 + 2 + 2: 9; 8, −7; −6, 3 (15).
const std::vector<float> kGroup{9, -1, 2, 0.5f,                         // tensor a
                                0.125f, 8, -7, 0.25f, 0.375f, 0.4375f,  // tensor b
                                1, 1.5f, -6, 0.0625f, 0.75f, 3, 0.5625f, 0.625f, 0.6875f, 0.8125f};
const std::vector<std::size_t> kSizes{4, 6, 10};
const std::vector<std::size_t> kGroupKept{0, 5, 6, 12};
const std::vector<std::size_t> kTensorKept{0, 5, 6, 12, 15};

// The codecs under test, each in the form that sends exactly the k largest
// of its input on a first step: DGC with momentum 0 (v = g) and the exact
// threshold (sample=1, distinct magnitudes).
std::vector<std::string> specs(const std::string& scope) {
  return {"topk:ratio=0.2,ef=off,select=" + scope,
          "dgc:ratio=0.2,momentum=0,sample=1,select=" + scope};
}

// x on `kept`, 0 elsewhere.
std::vector<float> keep_only(const std::vector<float>& x, const std::vector<std::size_t>& kept) {
  std::vector<float> out(x.size(), 0.0f);
  for (std::size_t i : kept) out[i] = x[i];
  return out;
}

// Rank r's input: the group times (r + 1), so every rank keeps the same
// positions and the mean is known exactly.
std::vector<float> rank_input(int rank) {
  std::vector<float> x = kGroup;
  for (float& v : x) v *= static_cast<float>(rank + 1);
  return x;
}

// The mean of the ranks' kept values, summed in rank order in fp32.
std::vector<float> expected_mean(int ranks, const std::vector<std::size_t>& kept) {
  std::vector<float> sum(kGroup.size(), 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const auto own = keep_only(rank_input(r), kept);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += own[i];
  }
  for (float& v : sum) v /= static_cast<float>(ranks);
  return sum;
}

class GroupSelectionTest : public ::testing::TestWithParam<int> {};

// Every rank's result and own contribution, for one spec and scope.
void expect_selection(int ranks, const std::string& spec, const std::vector<std::size_t>& kept) {
  std::vector<std::vector<float>> results(static_cast<std::size_t>(ranks));
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 3, .bucket = 0});
    codec->set_layout(TensorLayout::of_sizes(kSizes));
    auto data = rank_input(comm.rank());
    std::vector<float> own(data.size());
    codec->allreduce_mean(comm, data, {}, own);
    EXPECT_EQ(own, keep_only(rank_input(comm.rank()), kept)) << spec << ", rank " << comm.rank();
    results[static_cast<std::size_t>(comm.rank())] = data;
  });
  EXPECT_EQ(results[0], expected_mean(ranks, kept)) << spec;
  for (const auto& result : results) EXPECT_EQ(result, results[0]) << spec << ": ranks differ";
}

TEST_P(GroupSelectionTest, GroupKeepsTheLargestAcrossItsTensors) {
  for (const auto& spec : specs("group")) expect_selection(GetParam(), spec, kGroupKept);
}

TEST_P(GroupSelectionTest, TensorKeepsEachTensorsLargest) {
  for (const auto& spec : specs("tensor")) expect_selection(GetParam(), spec, kTensorKept);
}

TEST_P(GroupSelectionTest, GroupIsTheDefault) {
  for (const char* name : {"topk", "dgc"}) {
    EXPECT_NE(make_codec(name)->spec().find("select=group"), std::string::npos) << name;
  }
  expect_selection(GetParam(), "topk:ratio=0.2,ef=off", kGroupKept);
}

// select=tensor over the group gives, tensor by tensor, what each tensor
// gives compressed alone (the layer-wise plan), bit for bit.
TEST_P(GroupSelectionTest, TensorEqualsEachTensorCompressedAlone) {
  const int ranks = GetParam();
  for (const auto& spec : specs("tensor")) {
    run_world(ranks, [&](Communicator& comm) {
      auto merged = make_codec(spec, {.seed = 3, .bucket = 0});
      merged->set_layout(TensorLayout::of_sizes(kSizes));
      auto together = rank_input(comm.rank());
      merged->allreduce_mean(comm, together);
      std::size_t offset = 0;
      for (std::size_t size : kSizes) {
        auto alone_codec = make_codec(spec, {.seed = 3, .bucket = 0});
        const auto input = rank_input(comm.rank());
        std::vector<float> alone(input.begin() + static_cast<std::ptrdiff_t>(offset),
                                 input.begin() + static_cast<std::ptrdiff_t>(offset + size));
        alone_codec->allreduce_mean(comm, alone);
        const std::vector<float> part(together.begin() + static_cast<std::ptrdiff_t>(offset),
                                      together.begin() + static_cast<std::ptrdiff_t>(offset + size));
        EXPECT_EQ(part, alone) << spec << ", tensor at " << offset;
        offset += size;
      }
    });
  }
}

TEST(GroupSelectionSpecTest, RefusesAnUnknownScope) {
  for (const char* bad : {"topk:select=layer", "dgc:select=all"}) {
    EXPECT_THROW(make_codec(bad), InvalidArgument) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GroupSelectionTest, ::testing::Values(1, 2, 3, 4, 7));

}  // namespace
}  // namespace qccl::test
