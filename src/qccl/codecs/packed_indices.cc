#include "qccl/codecs/packed_indices.h"

namespace qccl {

// Eight indices (`bits` whole bytes) at a time, then the rest.
void pack_indices(std::span<const std::uint8_t> q, int bits, std::byte* out) {
  std::size_t i = 0;
  for (; i + 8 <= q.size(); i += 8) {
    std::uint64_t acc = 0;
    for (std::size_t j = 0; j < 8; ++j) acc = (acc << bits) | q[i + j];
    for (int k = bits - 1; k >= 0; --k) *out++ = static_cast<std::byte>(acc >> (8 * k));
  }
  std::uint64_t acc = 0;
  int pending = 0;  // at most 7 indices of 8 bits
  for (; i < q.size(); ++i, pending += bits) acc = (acc << bits) | q[i];
  for (; pending >= 8; pending -= 8) *out++ = static_cast<std::byte>(acc >> (pending - 8));
  if (pending > 0) *out = static_cast<std::byte>(acc << (8 - pending));
}

void unpack_indices(const std::byte* in, int bits, std::span<std::uint8_t> q) {
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  std::size_t i = 0;
  for (; i + 8 <= q.size(); i += 8) {
    std::uint64_t acc = 0;
    for (int k = 0; k < bits; ++k) acc = (acc << 8) | std::to_integer<std::uint64_t>(*in++);
    for (std::size_t j = 0; j < 8; ++j) {
      q[i + j] = static_cast<std::uint8_t>((acc >> (bits * static_cast<int>(7 - j))) & mask);
    }
  }
  const std::size_t rest = q.size() - i;
  const auto bytes = static_cast<int>((rest * static_cast<std::size_t>(bits) + 7) / 8);
  std::uint64_t acc = 0;
  for (int k = 0; k < bytes; ++k) acc = (acc << 8) | std::to_integer<std::uint64_t>(*in++);
  const int padding = 8 * bytes - static_cast<int>(rest) * bits;
  for (std::size_t j = 0; j < rest; ++j) {
    const int shift = padding + bits * static_cast<int>(rest - 1 - j);
    q[i + j] = static_cast<std::uint8_t>((acc >> shift) & mask);
  }
}

}  // namespace qccl
