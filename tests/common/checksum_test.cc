// The file and replica checksum, and its eight-lane form for data in memory
// (both of its implementations): each a function of the bytes alone, and
// any single damaged byte (or a changed length) changes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "qccl/common/checksum.h"
#include "qccl/common/checksum_lanes.h"

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
  // Two whole 64-byte blocks, whole words after them and a partial one.
  const auto bytes = counting_bytes(171);
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
  const auto bytes = counting_bytes(128);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_NE(of(bytes), of(longer));
  EXPECT_NE(of({}), of({std::byte{0}}));
  auto swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(of(bytes), of(swapped)) << "two words of one lane's block were swapped";
  auto halves_swapped = bytes;
  std::swap_ranges(halves_swapped.begin(), halves_swapped.begin() + 32, halves_swapped.begin() + 32);
  EXPECT_NE(of(bytes), of(halves_swapped)) << "the halves of a 64-byte block were swapped";
  auto blocks_swapped = bytes;
  std::swap_ranges(blocks_swapped.begin(), blocks_swapped.begin() + 64, blocks_swapped.begin() + 64);
  EXPECT_NE(of(bytes), of(blocks_swapped)) << "two 64-byte blocks were swapped";
  // Chaining through a seed sees the buffers in order.
  const std::span<const std::byte> a(bytes.data(), 40), b(bytes.data() + 40, 24);
  EXPECT_NE(of(b, of(a, kChecksumSeed)), of(a, of(b, kChecksumSeed)));
}

INSTANTIATE_TEST_SUITE_P(FileAndLanes, Checksums,
                         ::testing::Values(&checksum64, &checksum64_lanes, &checksum_lanes::portable));

// The AVX-512 lanes give the portable lanes' value for every length (whole
// blocks, words after them, a partial word), seed and alignment.
TEST(ChecksumLanes, BothImplementationsGiveTheSameValue) {
  if (!checksum_lanes::avx512_available()) GTEST_SKIP() << "this CPU has no AVX-512 F and DQ";
  const auto bytes = counting_bytes(400);
  for (std::size_t offset : {0, 1, 8}) {
    for (std::size_t n = 0; n + offset <= 300; ++n) {
      for (std::uint64_t seed : {kChecksumSeed, std::uint64_t{0}, ~std::uint64_t{0}}) {
        const std::span<const std::byte> part(bytes.data() + offset, n);
        ASSERT_EQ(checksum_lanes::avx512(part, seed), checksum_lanes::portable(part, seed))
            << n << " bytes at offset " << offset;
      }
    }
  }
}

// Checkpoint manifests hold checksum64's values: they must not change.
TEST(Checksum64, ValuesStayTheSame) {
  EXPECT_EQ(checksum_text(checksum64({})), "5acef174398ae315");
  EXPECT_EQ(checksum_text(checksum64(counting_bytes(67))), "e1f8d85b0856b1e9");
  EXPECT_EQ(checksum_text(checksum64(counting_bytes(4099))), "41b5da4e238fbff8");
}

}  // namespace
}  // namespace qccl
