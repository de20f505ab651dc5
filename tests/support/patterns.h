// Inputs with closed-form collective results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace qccl::test {

// Small integers (exact in fp32 whatever the summation order), varying in
// sign and magnitude along the vector and across ranks.
inline float pattern(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * (static_cast<long>(i % 13) - 6));
}
// Sum of pattern(r, i) over ranks 0..n-1: n(n+1)/2 * (i%13 - 6).
inline float pattern_sum(int ranks, std::size_t i) {
  return static_cast<float>(static_cast<long>(ranks) * (ranks + 1) / 2 *
                            (static_cast<long>(i % 13) - 6));
}
// Like pattern but zero on most elements, for sparse encodings.
inline float sparse_pattern(int rank, std::size_t i) {
  return (i + static_cast<std::size_t>(rank)) % 5 == 0 ? pattern(rank, i) : 0.0f;
}
inline float sparse_pattern_sum(int ranks, std::size_t i) {
  float s = 0;
  for (int r = 0; r < ranks; ++r) s += sparse_pattern(r, i);
  return s;
}
// Arbitrary floats (sums depend on order): for bitwise-identity checks.
inline float noise(int rank, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 40) ^ (i * 0x9E3779B97F4A7C15ULL);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

// Whether two floats are the same bits (NaNs and signed zeros included).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <typename F>
std::vector<float> make_vector(std::size_t n, F&& f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = f(i);
  return v;
}

// FNV-1a over the bytes: equal hashes on all ranks mean identical results.
inline std::int64_t bytes_hash(std::span<const float> data) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::byte b : std::as_bytes(data)) h = (h ^ static_cast<std::uint64_t>(b)) * 1099511628211ULL;
  return static_cast<std::int64_t>(h >> 1);
}

}  // namespace qccl::test
