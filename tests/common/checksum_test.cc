// The file and replica checksum: a function of the bytes alone, and any
// single damaged byte (or a changed length) changes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "qccl/common/checksum.h"

namespace qccl {
namespace {

std::uint64_t of(const std::vector<std::byte>& bytes) { return checksum64(bytes); }

std::vector<std::byte> counting_bytes(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i * 37 + 11);
  return bytes;
}

TEST(Checksum, EveryFlippedBitChangesIt) {
  const auto bytes = counting_bytes(67);  // whole words and a partial one
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

TEST(Checksum, LengthAndOrderMatter) {
  const auto bytes = counting_bytes(16);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_NE(of(bytes), of(longer));
  EXPECT_NE(of({}), of({std::byte{0}}));
  auto swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(of(bytes), of(swapped)) << "the two words were swapped";
  // Chaining through a seed sees the buffers in order.
  const std::span<const std::byte> a(bytes.data(), 8), b(bytes.data() + 8, 8);
  EXPECT_NE(checksum64(b, checksum64(a)), checksum64(a, checksum64(b)));
}

}  // namespace
}  // namespace qccl
