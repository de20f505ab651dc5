// A fast 64-bit checksum of bytes, to find damaged files and replicas whose
// parameters differ. Not cryptographic: it guards against accidents (a
// flipped bit, a torn write), not against someone forging a file.
// Not an installed header, but exported from libqccl_core.so:
// libqccl_engines.so calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

inline constexpr std::uint64_t kChecksumSeed = 0x51cc'1c4e'cc5a'0001ULL;

// The checksum of `bytes`, continuing from `seed` (pass a previous result
// to checksum several buffers as one stream of buffers).
std::uint64_t checksum64(std::span<const std::byte> bytes, std::uint64_t seed = kChecksumSeed);

// The same guarantees as checksum64, faster (eight multiply chains side by
// side, in one AVX-512 register where the CPU has it, instead of one
// dependent chain), with other values, the same on every CPU: for comparing
// data in memory (gathered weights across ranks and passes), never for
// files, whose checksums stay checksum64's.
std::uint64_t checksum64_lanes(std::span<const std::byte> bytes,
                               std::uint64_t seed = kChecksumSeed);

// A checksum as 16 lower-case hex digits, as files and messages show it.
std::string checksum_text(std::uint64_t checksum);

}  // namespace qccl
QCCL_API_END
