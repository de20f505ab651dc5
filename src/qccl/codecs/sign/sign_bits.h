// One bit per element: the sign bits every 1-bit codec puts on the wire
// (signSGD, SigNUM, EF-SignSGD, 1-bit SGD). Element i is bit i % 8 (least
// significant first) of byte i / 8; the bit is set for x >= 0 (so +0 and -0
// count as positive) and clear for x < 0. The unused high bits of the last
// byte are zero.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qccl {

// Bytes that hold `count` sign bits.
constexpr std::size_t sign_bytes(std::size_t count) { return (count + 7) / 8; }

// bits[0, sign_bytes(n)) = the signs of x[0, n).
void pack_signs(const float* x, std::uint8_t* bits, std::size_t n);

// out[i] = positive if bit (offset + i) is set, else negative, for i < n.
void unpack_signs(const std::uint8_t* bits, std::size_t offset, float* out, std::size_t n,
                  float positive, float negative);

// Whether the bits of the last byte past the first `count` are zero, as
// pack_signs leaves them: a decoder's check against corrupt bytes.
bool sign_padding_is_clear(const std::uint8_t* bits, std::size_t count);

}  // namespace qccl
