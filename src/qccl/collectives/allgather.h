// Allgather: every rank ends with every rank's contribution, in rank order.
#pragma once

#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl {

// Every rank contributes input (same length everywhere); output holds the
// contributions of ranks 0..n-1 back to back (n * input.size() elements).
void allgather(Communicator& comm, std::span<const float> input, std::span<float> output,
               const CollectiveOptions& options = {});

// Contributions of different lengths: rank r contributes counts[r] elements
// (input.size() must equal counts[rank]); every rank passes the same counts.
void allgatherv(Communicator& comm, std::span<const float> input,
                std::span<const std::size_t> counts, std::span<float> output,
                const CollectiveOptions& options = {});

// The same for raw bytes (encoded data whose size differs per rank).
void allgatherv_bytes(Communicator& comm, std::span<const std::byte> input,
                      std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                      const CollectiveOptions& options = {});

// Every rank's `count` (one small allreduce), for allgatherv when the ranks do
// not know each other's lengths in advance.
std::vector<std::size_t> allgather_counts(Communicator& comm, std::size_t count,
                                          const CollectiveOptions& options = {});

}  // namespace qccl
