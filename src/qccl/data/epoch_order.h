// The order in which a data-parallel run visits its training samples: one
// permutation per epoch, a pure function of (seed, epoch), identical on
// every rank, so rank r's share of step s is known without communication and
// a resumed run continues with exactly the samples it would have seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qccl::data {

// Fisher–Yates over 0..n-1 driven by counter-based random numbers.
std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

}  // namespace qccl::data
