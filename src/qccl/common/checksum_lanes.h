// checksum64_lanes' two implementations of the same function: a portable
// one, and one that runs its eight lanes in one AVX-512 register. They give
// the same value for every input; checksum64_lanes takes the AVX-512 one
// where the CPU has it. Declared here so tests can run both on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace qccl::checksum_lanes {

// Whether this CPU runs the AVX-512 implementation (AVX-512 F and DQ).
bool avx512_available();

std::uint64_t portable(std::span<const std::byte> bytes, std::uint64_t seed);
// Only where avx512_available().
std::uint64_t avx512(std::span<const std::byte> bytes, std::uint64_t seed);

}  // namespace qccl::checksum_lanes
