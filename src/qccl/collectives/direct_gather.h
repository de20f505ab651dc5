// Allgathers in one round: every rank sends its part straight to every
// other rank, all at once, inside a checked call (on its tag; waits bounded
// through Communicator::wait, so a cancelled stream stops them).
//
// The ring allgather takes n − 1 rounds and a recursive-doubling allreduce
// log2(n), each a message's latency; when ranks share cores, each such
// round can also wait for a scheduler time slice. Here every part is one
// message from its owner: one round, and each rank sends its part n − 1
// times, which is what the ring's slowest link carries as well when the
// parts differ in size (in every round some rank forwards the largest).
// Up to kDirectGatherRanks ranks the byte allgather (allgatherv_bytes_body)
// and the small integer allreduce (small_allreduce: the call check, the
// counts) take this round; beyond, the messages a rank posts grow faster
// than the rounds saved are worth, and they keep the ring and recursive
// doubling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl {

inline constexpr int kDirectGatherRanks = 16;

// Rank r's `input` (byte_counts[r] bytes; every rank passes the same
// counts) into `output` at the sum of the counts before r, for every r;
// returns the bytes this rank sent. A message of another size than its
// count is a CommError naming both.
std::uint64_t allgatherv_bytes_direct(Communicator& comm, int tag, std::span<const std::byte> input,
                                      std::span<const std::size_t> byte_counts,
                                      std::span<std::byte> output, Timeout timeout,
                                      std::string_view operation);

// The same for parts whose sizes the ranks bound but do not know: rank r's
// `input` (at most capacities[r] bytes; every rank passes the same
// capacities) into `output` at the sum of the capacities before r. Returns
// every rank's part size, read from the messages: one round where exact
// counts would take a round of their own first. A message beyond its
// capacity is a CommError.
std::vector<std::size_t> allgatherv_bytes_within(Communicator& comm, int tag,
                                                 std::span<const std::byte> input,
                                                 std::span<const std::size_t> capacities,
                                                 std::span<std::byte> output, Timeout timeout,
                                                 std::string_view operation);

}  // namespace qccl
