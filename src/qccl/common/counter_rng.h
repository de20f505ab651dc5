// Counter-based random numbers: every random draw is a pure function of its
// coordinates — (seed, step, bucket, rank, stream) folded into a key, and the
// element index as the counter — so a run is reproducible from its seed, no
// generator state is shared or mutated, and randomness that ranks must share
// can be derived instead of communicated. The mixing is splitmix64's
// finaliser (Steele, Lea, Flood 2014), which passes BigCrush as a counter-mode
// generator and vectorises.
#pragma once

#include <cstdint>

namespace qccl {

// What a draw is for, so independent uses never reuse numbers.
enum class RngStream : std::uint64_t {
  quantize = 1,
  reduce = 2,
  shared = 3,
  shuffle = 4,  // the order of training samples (data-parallel engine)
  init = 5,     // initial model parameters
  data = 6,     // generated datasets
  sparsify = 7, // which elements a sparsifier keeps (Rand-k's shared draw, DGC's sample)
};

constexpr std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x21F0AAADU;
  x ^= x >> 15;
  x *= 0x735A2D97U;
  x ^= x >> 15;
  return x;
}

constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

class CounterRng {
 public:
  constexpr CounterRng(std::uint64_t seed, std::uint64_t step, std::uint64_t bucket,
                       std::uint64_t rank, RngStream stream)
      : key_(mix64(mix64(mix64(mix64(mix64(seed ^ 0x6A09E667F3BCC909ULL) ^ step) ^ bucket) ^
                             rank) ^
                       static_cast<std::uint64_t>(stream))) {}

  // 32 random bits for `counter`: the high half of bits64.
  constexpr std::uint32_t bits(std::uint64_t counter) const {
    return static_cast<std::uint32_t>(bits64(counter) >> 32);
  }
  // 32 random bits for `counter` (taken mod 2^32) from the 32-bit hash, as
  // the vectorised kernels compute them: counter·φ + k1 is a bijection, so
  // distinct counters hash distinct inputs.
  constexpr std::uint32_t bits32(std::uint64_t counter) const {
    return mix32(static_cast<std::uint32_t>(counter) * 0x9E3779B9U + key_low()) ^ key_high();
  }
  constexpr std::uint32_t key_low() const { return static_cast<std::uint32_t>(key_); }
  constexpr std::uint32_t key_high() const { return static_cast<std::uint32_t>(key_ >> 32); }

  // 64 random bits for `counter`.
  constexpr std::uint64_t bits64(std::uint64_t counter) const {
    return mix64(key_ + counter * 0x9E3779B97F4A7C15ULL);
  }
  // Uniform in [0, 1) with 24 random bits (exact in fp32).
  constexpr float uniform(std::uint64_t counter) const {
    return static_cast<float>(bits(counter) >> 8) * 0x1p-24f;
  }
  constexpr std::uint64_t key() const { return key_; }

 private:
  std::uint64_t key_;
};

}  // namespace qccl
