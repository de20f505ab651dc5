#include "mutations.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace qccl::fuzz {
namespace {

std::size_t below(std::size_t bound, std::mt19937_64& rng) {
  return bound == 0 ? 0 : static_cast<std::size_t>(rng() % bound);
}

template <class T>
void put(Bytes& bytes, std::size_t at, T value) {
  if (bytes.size() < sizeof(T)) return;
  at = std::min(at, bytes.size() - sizeof(T));
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

// A word position: aligned (headers, counts, values) or anywhere.
std::size_t word_at(const Bytes& bytes, std::size_t width, std::mt19937_64& rng) {
  const std::size_t at = below(bytes.size(), rng);
  return rng() % 2 ? at - at % width : at;
}

const std::uint8_t kBoundaryBytes[] = {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF};
const std::int32_t kBoundaryInts[] = {0, 1, -1, std::numeric_limits<std::int32_t>::min(),
                                      std::numeric_limits<std::int32_t>::max(), 127, -128,
                                      1 << 24, -(1 << 24)};
const std::uint32_t kBoundaryCounts[] = {0xFFFFFFFFU, 0x80000000U, 0x10000U, 1000000U};
const std::int64_t kBoundaryLongs[] = {std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(), -1};
const float kSpecialFloats[] = {std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                FLT_MAX, -FLT_MAX, 1e-40f, -0.0f, FLT_MIN, 1e30f};

std::string change(Bytes& bytes, std::mt19937_64& rng) {
  switch (rng() % 10) {
    case 0: {
      if (bytes.empty()) break;
      const std::size_t at = below(bytes.size(), rng);
      bytes[at] ^= static_cast<std::byte>(1u << (rng() % 8));
      return "bit flip at " + std::to_string(at);
    }
    case 1: {
      if (bytes.empty()) break;
      const std::size_t at = below(bytes.size(), rng);
      bytes[at] = static_cast<std::byte>(kBoundaryBytes[rng() % std::size(kBoundaryBytes)]);
      return "boundary byte at " + std::to_string(at);
    }
    case 2: {
      const std::size_t at = word_at(bytes, 4, rng);
      put(bytes, at, kBoundaryInts[rng() % std::size(kBoundaryInts)]);
      return "boundary int32 at " + std::to_string(at);
    }
    case 3: {
      const std::size_t at = word_at(bytes, 4, rng);
      put(bytes, at, kBoundaryCounts[rng() % std::size(kBoundaryCounts)]);
      return "large count at " + std::to_string(at);
    }
    case 4: {
      const std::size_t at = word_at(bytes, 8, rng);
      put(bytes, at, kBoundaryLongs[rng() % std::size(kBoundaryLongs)]);
      return "boundary int64 at " + std::to_string(at);
    }
    case 5: {
      const std::size_t at = word_at(bytes, 4, rng);
      put(bytes, at, kSpecialFloats[rng() % std::size(kSpecialFloats)]);
      return "special float at " + std::to_string(at);
    }
    case 6: {
      const std::size_t size = below(bytes.size(), rng);
      bytes.resize(size);
      return "truncated to " + std::to_string(size);
    }
    case 7: {
      const std::size_t extra = 1 + below(rng() % 4 ? 8 : 64, rng);
      for (std::size_t i = 0; i < extra; ++i) bytes.push_back(static_cast<std::byte>(rng()));
      return "extended by " + std::to_string(extra);
    }
    case 8: {
      for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
      return "random bytes";
    }
    default: {
      if (bytes.empty()) break;
      const std::size_t at = below(bytes.size(), rng);
      const std::size_t length = 1 + below(std::min<std::size_t>(16, bytes.size() - at), rng);
      for (std::size_t i = at; i < at + length && i < bytes.size(); ++i) {
        bytes[i] = static_cast<std::byte>(rng());
      }
      return "random run at " + std::to_string(at);
    }
  }
  bytes.push_back(static_cast<std::byte>(rng()));
  return "one byte appended";
}

}  // namespace

std::string mutate(Bytes& bytes, std::mt19937_64& rng) {
  std::string what;
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int c = 0; c < changes; ++c) what += (what.empty() ? "" : ", ") + change(bytes, rng);
  return what;
}

std::string mutate_within(Bytes& bytes, std::size_t capacity, std::mt19937_64& rng) {
  std::string what = mutate(bytes, rng);
  if (bytes.size() > capacity) {
    bytes.resize(capacity);
    what += ", cut to the capacity";
  }
  return what;
}

}  // namespace qccl::fuzz
