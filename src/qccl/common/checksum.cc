#include "qccl/common/checksum.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace qccl {

// The bytes are read as little-endian 64-bit words w, each folded in by
//   h = rotl(h ^ w·K1, 31) · K2.
// Every part of that step is a bijection (K1 and K2 are odd, so multiplying
// by them is invertible mod 2^64), so two inputs that differ in one word
// always give different states, and the difference carries through every
// later word: a change confined to one 8-byte word is always detected, any
// other change is missed with probability about 2^-64. The last partial word
// is zero-padded, and the length goes into the final mix (a murmur-style
// avalanche), so inputs that differ only by trailing zeros differ too.
// One multiply-rotate-multiply per 8 bytes: several GB/s on one core.
std::uint64_t checksum64(std::span<const std::byte> bytes, std::uint64_t seed) {
  constexpr std::uint64_t k1 = 0x9e37'79b9'7f4a'7c15ULL, k2 = 0xc2b2'ae3d'27d4'eb4fULL;
  std::uint64_t h = seed;
  const auto fold = [&](std::uint64_t w) { h = std::rotl(h ^ (w * k1), 31) * k2; };
  const std::size_t whole = bytes.size() / 8 * 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    fold(w);
  }
  if (whole < bytes.size()) {
    std::uint64_t w = 0;
    for (std::size_t i = whole; i < bytes.size(); ++i) {
      w |= static_cast<std::uint64_t>(bytes[i]) << (8 * (i - whole));
    }
    fold(w);
  }
  h ^= bytes.size();
  h ^= h >> 33;
  h *= 0xff51'afd7'ed55'8ccdULL;
  h ^= h >> 33;
  h *= 0xc4ce'b9fe'1a85'ec53ULL;
  h ^= h >> 33;
  return h;
}

std::string checksum_text(std::uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace qccl
