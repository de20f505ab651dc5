// Level indices of fewer than 8 bits packed into bytes, as min-max sends
// them (QSDP's quantizers, quantizers/minmax.h): `bits` bits each, most
// significant bit first, the last byte zero padded (BitWriter's format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace qccl {

// q's indices (each below 2^bits, bits 1..7) into (q.size()·bits + 7)/8 bytes at `out`.
void pack_indices(std::span<const std::uint8_t> q, int bits, std::byte* out);
// pack_indices' inverse; `in` holds (q.size()·bits + 7)/8 bytes.
void unpack_indices(const std::byte* in, int bits, std::span<std::uint8_t> q);

}  // namespace qccl
