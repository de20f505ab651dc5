#include <gtest/gtest.h>

#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/receive_window.h"
#include "qccl/common/errors.h"
#include "../support/sparse_test_reduction.h"
#include "../support/world.h"

namespace qccl {
namespace {

TEST(SplitRangeTest, CoversTheRangeWithAlignedBalancedParts) {
  for (std::size_t count : {0, 1, 7, 10, 100, 1001}) {
    for (std::size_t parts : {1, 2, 3, 7, 16}) {
      for (std::size_t g : {1, 4, 64}) {
        const auto ranges = split_range({5, count}, parts, g);
        ASSERT_EQ(ranges.size(), parts);
        std::size_t next = 5, smallest_units = SIZE_MAX, largest_units = 0;
        for (std::size_t p = 0; p < parts; ++p) {
          EXPECT_EQ(ranges[p].first, next);
          next = ranges[p].end();
          if (next < 5 + count) {
            EXPECT_EQ((next - 5) % g, 0u) << "boundary not aligned";
          }
          const std::size_t units = (ranges[p].count + g - 1) / g;
          smallest_units = std::min(smallest_units, units);
          largest_units = std::max(largest_units, units);
        }
        EXPECT_EQ(next, 5 + count);
        EXPECT_LE(largest_units - smallest_units, 1u);
      }
    }
  }
}

TEST(SplitRangeTest, RejectsZeroParts) {
  EXPECT_THROW(split_range({0, 10}, 0, 1), InvalidArgument);
  EXPECT_THROW(split_range({0, 10}, 2, 0), InvalidArgument);
}

TEST(SlotLayoutTest, IdentityLayoutMapsElementsToTheirBytes) {
  Fp32Sum sum;
  const auto segments = split_range({0, 100}, 3, 1);
  SlotLayout layout(segments, 4, 1, sum);
  EXPECT_EQ(layout.slot_count(), 12u);
  EXPECT_EQ(layout.total_bytes(), 400u);
  EXPECT_TRUE(layout.exact_sizes());
  for (std::size_t i = 0; i < layout.slot_count(); ++i) {
    EXPECT_EQ(layout.slot(i).offset, layout.slot(i).elements.first * 4);
    EXPECT_EQ(layout.slot(i).capacity, layout.slot(i).elements.count * 4);
  }
}

TEST(SlotLayoutTest, EncodedLayoutPacksCapacitiesBackToBack) {
  test::SparseTestReduction sparse;
  const auto segments = split_range({0, 50}, 2, sparse.granularity());
  SlotLayout layout(segments, 3, sparse.granularity(), sparse);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layout.slot_count(); ++i) {
    EXPECT_EQ(layout.slot(i).offset, offset);
    EXPECT_EQ(layout.slot(i).capacity, 4 + 8 * layout.slot(i).elements.count);
    EXPECT_EQ(layout.slot(i).elements.first % 4, 0u);
    offset += layout.slot(i).capacity;
  }
  EXPECT_EQ(layout.total_bytes(), offset);
  EXPECT_FALSE(layout.exact_sizes());
}

// One byte per element and a header: the wire size of an 8-bit codec.
class ByteCodes final : public Encoding {
 public:
  std::string name() const override { return "byte-codes"; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return 8 + count; }
  std::size_t encode(std::span<const float>, std::size_t, std::span<std::byte>) override {
    return 0;
  }
  void decode(std::span<const std::byte>, std::size_t, std::span<float>) override {}
  void decode_contribution(std::span<const std::byte>, std::size_t, std::span<float>) override {}
};

// The automatic window follows the chunks' bytes per element on the wire:
// 16 for fp32 (and wider), 4 for compressed chunks and raw bytes; a window
// the caller sets is kept.
TEST(ReceiveWindowTest, FollowsTheWireSizeOfTheChunksUnlessSet) {
  const auto segments = split_range({0, 100000}, 3, 1);
  Fp32Sum sum;
  ByteCodes codes;
  test::SparseTestReduction wide;  // 8 bytes per element
  const std::vector<std::size_t> raw{4000, 4000};
  CollectiveOptions automatic;
  EXPECT_EQ(automatic.window, 0) << "automatic by default";
  EXPECT_EQ(receive_window(automatic, SlotLayout(segments, 4, 1, sum)), kUncompressedWindow);
  EXPECT_EQ(receive_window(automatic, SlotLayout(segments, 4, 4, wide)), kUncompressedWindow);
  EXPECT_EQ(receive_window(automatic, SlotLayout(segments, 4, 1, codes)), kCompressedWindow);
  EXPECT_EQ(receive_window(automatic, SlotLayout(raw, 4)), kCompressedWindow);
  EXPECT_EQ(receive_window(automatic, SlotLayout(std::vector<Range>{{0, 0}}, 1, 1, sum)),
            kCompressedWindow)
      << "no elements at all";
  CollectiveOptions seven;
  seven.window = 7;
  EXPECT_EQ(receive_window(seven, SlotLayout(segments, 4, 1, sum)), 7u);
  EXPECT_EQ(receive_window(seven, SlotLayout(segments, 4, 1, codes)), 7u);
}

TEST(ReceiveWindowTest, NegativeWindowsAreRefused) {
  test::run_world(2, [](Communicator& comm) {
    std::vector<float> data(16, 1.0f);
    Fp32Sum sum;
    CollectiveOptions options;
    options.window = -1;
    EXPECT_THROW(allreduce(comm, data, sum, options), InvalidArgument);
    options.window = 0;
    allreduce(comm, data, sum, options);
    EXPECT_EQ(data[0], 2.0f);
  });
}

TEST(SlotLayoutTest, ChunksForTargetsTheChunkSize) {
  const std::vector<Range> segments{{0, 1000}, {1000, 3000}};
  EXPECT_EQ(chunks_for(segments, 4000), 3u);  // 12000 bytes / 4000
  EXPECT_EQ(chunks_for(segments, 1u << 20), 1u);
  EXPECT_EQ(chunks_for(std::vector<Range>{{0, 0}}, 64), 1u);
  // A 1 MiB segment under a 1 MiB cap still pipelines in 4 chunks of 256 KiB;
  // a 128 KiB one in 2 chunks of 64 KiB.
  EXPECT_EQ(chunks_for(std::vector<Range>{{0, 1u << 18}}, 1u << 20), 4u);
  EXPECT_EQ(chunks_for(std::vector<Range>{{0, 1u << 15}}, 1u << 20), 2u);
}

}  // namespace
}  // namespace qccl
