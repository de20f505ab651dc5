// Random changes to an encoded chunk or a saved state, as a corrupt,
// truncated or padded message may bring them: bit flips, random bytes,
// boundary integers (0x80, INT_MIN, INT_MAX, INT64_MIN, counts of 2^32 − 1)
// and special floats (NaN, ±Inf, FLT_MAX, subnormals, −0) at word
// positions, truncation, extension, a fresh random chunk of the same size.
#pragma once

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace qccl::fuzz {

using Bytes = std::vector<std::byte>;

// Applies one to three random changes to `bytes`; returns what it did, for
// the report of a failure.
std::string mutate(Bytes& bytes, std::mt19937_64& rng);

// Like mutate, but never longer than `capacity` bytes (an accumulated chunk
// lives in a buffer of the collective's own, sized by max_encoded_bytes).
std::string mutate_within(Bytes& bytes, std::size_t capacity, std::mt19937_64& rng);

}  // namespace qccl::fuzz
