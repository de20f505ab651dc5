// Allgathers of a few bytes per rank in one round: every rank sends its part
// straight to every other rank, all at once, inside a checked call (on its
// tag; waits bounded through Communicator::wait, so a cancelled stream stops
// them).
//
// For the small gathers of a sparse step. The ring allgather takes n − 1
// rounds and a recursive-doubling allreduce log2(n), each a message's
// latency; when ranks share cores, each such round can also wait for a
// scheduler time slice. Here every part is one message from its owner: one
// round, and each rank sends its part n − 1 times, which is what the ring's
// slowest link carries as well when the parts differ in size (in every
// round some rank forwards the largest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl {

// Every rank's `count`, in rank order.
std::vector<std::size_t> allgather_counts_direct(Communicator& comm, int tag, std::size_t count,
                                                 Timeout timeout);

// Rank r's `input` (byte_counts[r] bytes; every rank passes the same
// counts) into `output` at the sum of the counts before r, for every r;
// returns the bytes this rank sent. A message of another size than its
// count is a CommError naming both.
std::uint64_t allgatherv_bytes_direct(Communicator& comm, int tag, std::span<const std::byte> input,
                                      std::span<const std::size_t> byte_counts,
                                      std::span<std::byte> output, Timeout timeout,
                                      std::string_view operation);

}  // namespace qccl
