// The file and replica checksum, and its four-lane form for data in memory:
// each a function of the bytes alone, and any single damaged byte (or a
// changed length) changes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "qccl/common/checksum.h"

namespace qccl {
namespace {

using Checksum = std::uint64_t (*)(std::span<const std::byte>, std::uint64_t);

class Checksums : public ::testing::TestWithParam<Checksum> {
 protected:
  std::uint64_t of(const std::vector<std::byte>& bytes) const {
    return GetParam()(bytes, kChecksumSeed);
  }
  std::uint64_t of(std::span<const std::byte> bytes, std::uint64_t seed) const {
    return GetParam()(bytes, seed);
  }
};

std::vector<std::byte> counting_bytes(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i * 37 + 11);
  return bytes;
}

TEST_P(Checksums, EveryFlippedBitChangesIt) {
  // Whole 32-byte blocks, whole words after them and a partial one.
  const auto bytes = counting_bytes(107);
  const auto original = of(bytes);
  EXPECT_EQ(of(bytes), original) << "not a function of the bytes alone";
  std::set<std::uint64_t> seen{original};
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto damaged = bytes;
      damaged[i] ^= static_cast<std::byte>(1 << bit);
      seen.insert(of(damaged));
    }
  }
  EXPECT_EQ(seen.size(), 1 + 8 * bytes.size()) << "two damaged copies collided";
}

TEST_P(Checksums, LengthAndOrderMatter) {
  const auto bytes = counting_bytes(64);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_NE(of(bytes), of(longer));
  EXPECT_NE(of({}), of({std::byte{0}}));
  auto swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(of(bytes), of(swapped)) << "two words of one lane's block were swapped";
  auto blocks_swapped = bytes;
  std::swap_ranges(blocks_swapped.begin(), blocks_swapped.begin() + 32, blocks_swapped.begin() + 32);
  EXPECT_NE(of(bytes), of(blocks_swapped)) << "two 32-byte blocks were swapped";
  // Chaining through a seed sees the buffers in order.
  const std::span<const std::byte> a(bytes.data(), 40), b(bytes.data() + 40, 24);
  EXPECT_NE(of(b, of(a, kChecksumSeed)), of(a, of(b, kChecksumSeed)));
}

INSTANTIATE_TEST_SUITE_P(FileAndLanes, Checksums, ::testing::Values(&checksum64, &checksum64_lanes));

// Checkpoint manifests hold checksum64's values: they must not change.
TEST(Checksum64, ValuesStayTheSame) {
  EXPECT_EQ(checksum_text(checksum64({})), "5acef174398ae315");
  EXPECT_EQ(checksum_text(checksum64(counting_bytes(67))), "e1f8d85b0856b1e9");
  EXPECT_EQ(checksum_text(checksum64(counting_bytes(4099))), "41b5da4e238fbff8");
}

}  // namespace
}  // namespace qccl
