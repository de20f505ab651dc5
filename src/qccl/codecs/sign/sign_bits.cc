#include "qccl/codecs/sign/sign_bits.h"

namespace qccl {

void pack_signs(const float* x, std::uint8_t* bits, std::size_t n) {
  const std::size_t whole = n / 8;
  for (std::size_t b = 0; b < whole; ++b) {
    const float* v = x + 8 * b;
    unsigned byte = 0;
    for (unsigned j = 0; j < 8; ++j) byte |= static_cast<unsigned>(v[j] >= 0.0f) << j;
    bits[b] = static_cast<std::uint8_t>(byte);
  }
  if (n % 8 == 0) return;
  unsigned byte = 0;
  for (std::size_t j = 0; j < n % 8; ++j) {
    byte |= static_cast<unsigned>(x[8 * whole + j] >= 0.0f) << j;
  }
  bits[whole] = static_cast<std::uint8_t>(byte);
}

// Bit by bit up to a byte boundary, then eight elements per byte.
void unpack_signs(const std::uint8_t* bits, std::size_t offset, float* out, std::size_t n,
                  float positive, float negative) {
  const float level[2] = {negative, positive};
  std::size_t i = 0;
  for (; i < n && (offset + i) % 8 != 0; ++i) {
    const std::size_t k = offset + i;
    out[i] = level[(bits[k / 8] >> (k % 8)) & 1u];
  }
  for (; i + 8 <= n; i += 8) {
    const unsigned byte = bits[(offset + i) / 8];
    for (unsigned j = 0; j < 8; ++j) out[i + j] = level[(byte >> j) & 1u];
  }
  for (; i < n; ++i) {
    const std::size_t k = offset + i;
    out[i] = level[(bits[k / 8] >> (k % 8)) & 1u];
  }
}

bool sign_padding_is_clear(const std::uint8_t* bits, std::size_t count) {
  if (count % 8 == 0) return true;
  return (bits[count / 8] >> (count % 8)) == 0;
}

}  // namespace qccl
