// merge_by_index: every index that some rank sent is visited once, in
// increasing order, with the codes of the ranks that sent it in rank order;
// indices out of order or beyond the data are a corrupt message.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "qccl/codecs/merge_by_index.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using Entries = std::vector<std::pair<std::uint32_t, std::uint8_t>>;

// The gathered block: per rank, its indices, then its codes.
std::vector<std::byte> gathered_block(const std::vector<Entries>& ranks,
                                      std::vector<std::size_t>& counts) {
  std::vector<std::byte> all;
  counts.clear();
  for (const Entries& entries : ranks) {
    counts.push_back(entries.size());
    for (const auto& [index, code] : entries) {
      std::byte bytes[4];
      std::memcpy(bytes, &index, 4);
      all.insert(all.end(), bytes, bytes + 4);
    }
    for (const auto& entry : entries) all.push_back(static_cast<std::byte>(entry.second));
  }
  return all;
}

// Rank r sends an increasing random subset of [0, length), overlapping the
// others'; some ranks send nothing.
std::vector<Entries> random_entries(int ranks, std::uint32_t length, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Entries> out(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    if (r % 3 == 2) continue;
    for (std::uint32_t i = 0; i < length; ++i) {
      if (rng() % 4 == 0) out[static_cast<std::size_t>(r)].push_back({i, static_cast<std::uint8_t>(rng())});
    }
  }
  return out;
}

class MergeByIndexTest : public ::testing::TestWithParam<int> {};

TEST_P(MergeByIndexTest, VisitsEachIndexOnceInOrderWithItsCodesInRankOrder) {
  const int ranks = GetParam();
  for (const std::uint32_t length : {1U, 17U, 1000U}) {
    const auto entries = random_entries(ranks, length, 7 + length);
    std::map<std::uint32_t, std::vector<std::pair<std::size_t, std::uint8_t>>> expected;
    for (std::size_t r = 0; r < entries.size(); ++r) {
      for (const auto& [index, code] : entries[r]) expected[index].push_back({r, code});
    }
    std::vector<std::size_t> counts;
    const auto all = gathered_block(entries, counts);
    std::vector<std::pair<std::uint32_t, std::vector<std::pair<std::size_t, std::uint8_t>>>> seen;
    std::vector<std::pair<std::size_t, std::uint8_t>> codes;
    merge_by_index(
        all, counts, length, "test",
        [&](std::size_t r, std::uint8_t code) { codes.push_back({r, code}); },
        [&](std::uint32_t i) { seen.push_back({i, std::exchange(codes, {})}); });
    EXPECT_TRUE(codes.empty()) << "codes added after the last index was done";
    ASSERT_EQ(seen.size(), expected.size()) << ranks << " ranks, length " << length;
    auto want = expected.begin();
    for (const auto& [index, got] : seen) {
      EXPECT_EQ(index, want->first);
      EXPECT_EQ(got, want->second) << "index " << index;
      ++want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, MergeByIndexTest, ::testing::Values(1, 2, 3, 4, 7));

TEST(MergeByIndex, NothingGatheredVisitsNothing) {
  const std::vector<std::size_t> counts{0, 0, 0};
  int calls = 0;
  merge_by_index(std::span<const std::byte>(), counts, 10, "test",
                 [&](std::size_t, std::uint8_t) { ++calls; }, [&](std::uint32_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(MergeByIndex, IndicesOutOfOrderRepeatedOrBeyondTheDataAreACorruptMessage) {
  const std::vector<std::vector<Entries>> corrupt{
      {{{1, 1}, {5, 1}}, {{4, 1}, {3, 1}}},  // rank 1 decreasing
      {{{2, 1}, {2, 1}}},                    // repeated
      {{{0, 1}}, {{3, 1}, {10, 1}}},         // beyond length 10
      {{{10, 1}}},
  };
  for (const auto& ranks : corrupt) {
    std::vector<std::size_t> counts;
    const auto all = gathered_block(ranks, counts);
    EXPECT_THROW(merge_by_index(all, counts, 10, "test", [](std::size_t, std::uint8_t) {},
                                [](std::uint32_t) {}),
                 CommError);
  }
}

TEST(MergeByIndex, CountsBeyondTheBlockAreRefused) {
  std::vector<std::size_t> counts;
  const auto all = gathered_block({{{1, 1}, {2, 1}}}, counts);
  counts[0] = 3;
  EXPECT_THROW(merge_by_index(all, counts, 10, "test", [](std::size_t, std::uint8_t) {},
                              [](std::uint32_t) {}),
               InvalidArgument);
}

}  // namespace
}  // namespace qccl::test
