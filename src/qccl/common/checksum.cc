#include "qccl/common/checksum.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>

#include "qccl/common/checksum_lanes.h"

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
namespace {

constexpr std::uint64_t k1 = 0x9e37'79b9'7f4a'7c15ULL, k2 = 0xc2b2'ae3d'27d4'eb4fULL;

std::uint64_t fold(std::uint64_t h, std::uint64_t w) { return std::rotl(h ^ (w * k1), 31) * k2; }

std::uint64_t word_at(const std::byte* at) {
  std::uint64_t w;
  std::memcpy(&w, at, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

// Folds the words of bytes[from, size) into h, the last partial word zero-padded.
std::uint64_t fold_rest(std::uint64_t h, std::span<const std::byte> bytes, std::size_t from) {
  const std::size_t whole = bytes.size() / 8 * 8;
  for (std::size_t i = from; i < whole; i += 8) h = fold(h, word_at(bytes.data() + i));
  if (whole < bytes.size()) {
    std::uint64_t w = 0;
    for (std::size_t i = whole; i < bytes.size(); ++i) {
      w |= static_cast<std::uint64_t>(bytes[i]) << (8 * (i - whole));
    }
    h = fold(h, w);
  }
  return h;
}

std::uint64_t finish(std::uint64_t h, std::size_t length) {
  h ^= length;
  h ^= h >> 33;
  h *= 0xff51'afd7'ed55'8ccdULL;
  h ^= h >> 33;
  h *= 0xc4ce'b9fe'1a85'ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::uint64_t checksum64(std::span<const std::byte> bytes, std::uint64_t seed) {
  return finish(fold_rest(seed, bytes, 0), bytes.size());
}

// Eight lanes take the 64-byte blocks' words in turn (word j of a block to
// lane j), each by checksum64's step, so eight multiply chains run side by
// side (in one AVX-512 register where the CPU has it: one vector step per
// block); the lanes are then folded into lane 0 in order, the words after
// the last whole block follow, and the length goes into the same final mix.
// Each lane's step and each fold of a lane are bijections, so a change
// confined to one word is still always detected.
namespace {

constexpr std::size_t kLanes = 8, kBlock = 8 * kLanes;
using Lanes = std::array<std::uint64_t, kLanes>;

Lanes first_lanes(std::uint64_t seed) {
  Lanes lane;
  for (std::size_t j = 0; j < kLanes; ++j) lane[j] = seed ^ (k1 * (2 * j + 1));
  return lane;
}

std::uint64_t finish_lanes(const Lanes& lane, std::span<const std::byte> bytes) {
  const std::size_t blocks = bytes.size() / kBlock * kBlock;
  std::uint64_t h = lane[0];
  for (std::size_t j = 1; j < kLanes; ++j) h = fold(h, lane[j]);
  return finish(fold_rest(h, bytes, blocks), bytes.size());
}

}  // namespace

namespace checksum_lanes {

bool avx512_available() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

std::uint64_t portable(std::span<const std::byte> bytes, std::uint64_t seed) {
  auto lane = first_lanes(seed);
  const std::size_t blocks = bytes.size() / kBlock * kBlock;
  for (std::size_t i = 0; i < blocks; i += kBlock) {
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] = fold(lane[j], word_at(bytes.data() + i + 8 * j));
  }
  return finish_lanes(lane, bytes);
}

#if defined(__x86_64__)
// The lanes' step as vector operations: h = rotl(h ^ w·K1, 31)·K2 on eight
// 64-bit lanes (x86 is little-endian, so a load gives word_at's words).
__attribute__((target("avx512f,avx512dq"))) std::uint64_t avx512(std::span<const std::byte> bytes,
                                                                   std::uint64_t seed) {
  auto lane = first_lanes(seed);
  __m512i h = _mm512_loadu_si512(lane.data());
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(k1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(k2));
  const std::size_t blocks = bytes.size() / kBlock * kBlock;
  for (std::size_t i = 0; i < blocks; i += kBlock) {
    const __m512i w = _mm512_loadu_si512(bytes.data() + i);
    const __m512i x = _mm512_xor_si512(h, _mm512_mullo_epi64(w, m1));
    // The masked rotate with every lane selected: GCC 12's unmasked one
    // reads an undefined register that -Wmaybe-uninitialized reports.
    h = _mm512_mullo_epi64(_mm512_mask_rol_epi64(x, 0xFF, x, 31), m2);
  }
  _mm512_storeu_si512(lane.data(), h);
  return finish_lanes(lane, bytes);
}
#else
std::uint64_t avx512(std::span<const std::byte> bytes, std::uint64_t seed) {
  return portable(bytes, seed);
}
#endif

}  // namespace checksum_lanes

std::uint64_t checksum64_lanes(std::span<const std::byte> bytes, std::uint64_t seed) {
  static const bool vector = checksum_lanes::avx512_available();
  return vector ? checksum_lanes::avx512(bytes, seed) : checksum_lanes::portable(bytes, seed);
}

std::string checksum_text(std::uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace qccl
