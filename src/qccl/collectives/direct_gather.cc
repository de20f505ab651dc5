#include "qccl/collectives/direct_gather.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "qccl/common/errors.h"
#include "qccl/transport/transport.h"

namespace qccl {
namespace {

// Posts a receive of part q into `parts[q]` from every other rank and sends
// `mine` to every other rank, then waits for all of them; returns the bytes
// sent and sets received[q] to the size of rank q's message (received[me]
// is mine's). With `exact`, each message must fill its part; otherwise it
// may be shorter (a longer one fails in the transport).
std::uint64_t exchange_parts(Communicator& comm, int tag, std::span<const std::byte> mine,
                             std::span<const std::span<std::byte>> parts, bool exact,
                             std::span<std::size_t> received, Timeout timeout,
                             std::string_view operation) {
  const int n = comm.size();
  const int me = comm.rank();
  Transport& transport = comm.transport();
  std::vector<RequestPtr> receives(static_cast<std::size_t>(n));
  std::vector<RequestPtr> sends;
  sends.reserve(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    const auto at = static_cast<std::size_t>(q);
    if (q != me) receives[at] = transport.irecv(q, tag, parts[at]);
  }
  std::uint64_t sent = 0;
  for (int k = 1; k < n; ++k) {  // from the next rank on: not every rank to rank 0 first
    sends.push_back(transport.isend((me + k) % n, tag, mine));
    sent += mine.size();
  }
  received[static_cast<std::size_t>(me)] = mine.size();
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    Request& request = *receives[static_cast<std::size_t>(q)];
    comm.wait(request, timeout, operation);
    const std::size_t expected = parts[static_cast<std::size_t>(q)].size();
    if (exact && request.bytes() != expected) {
      throw CommError(std::string(operation) + ": rank " + std::to_string(me) + " received " +
                      std::to_string(request.bytes()) + " bytes from rank " + std::to_string(q) +
                      " where its part has " + std::to_string(expected) +
                      ": the ranks disagree on the sizes of the call");
    }
    received[static_cast<std::size_t>(q)] = request.bytes();
  }
  for (auto& send : sends) comm.wait(*send, timeout, operation);
  return sent;
}

// The parts of `output` at the sums of `sizes` before each rank, this
// rank's filled from `input` (which the caller checked fits).
std::vector<std::span<std::byte>> place_parts(std::span<const std::byte> input,
                                              std::span<const std::size_t> sizes,
                                              std::span<std::byte> output, int rank) {
  std::vector<std::span<std::byte>> parts;
  std::size_t at = 0;
  for (std::size_t size : sizes) {
    parts.push_back(output.subspan(at, size));
    at += size;
  }
  const auto me = static_cast<std::size_t>(rank);
  if (!input.empty() && input.data() != parts[me].data()) {
    std::memmove(parts[me].data(), input.data(), input.size());
  }
  return parts;
}

}  // namespace

std::uint64_t allgatherv_bytes_direct(Communicator& comm, int tag, std::span<const std::byte> input,
                                      std::span<const std::size_t> byte_counts,
                                      std::span<std::byte> output, Timeout timeout,
                                      std::string_view operation) {
  check_allgather_arguments(input.size(), output.size(), byte_counts, comm.size(), comm.rank());
  const auto parts = place_parts(input, byte_counts, output, comm.rank());
  std::vector<std::size_t> received(byte_counts.size());
  return exchange_parts(comm, tag, parts[static_cast<std::size_t>(comm.rank())], parts, true,
                        received, timeout, operation);
}

std::vector<std::size_t> allgatherv_bytes_within(Communicator& comm, int tag,
                                                 std::span<const std::byte> input,
                                                 std::span<const std::size_t> capacities,
                                                 std::span<std::byte> output, Timeout timeout,
                                                 std::string_view operation) {
  const auto me = static_cast<std::size_t>(comm.rank());
  check_allgather_arguments(me < capacities.size() ? capacities[me] : input.size(), output.size(),
                            capacities, comm.size(), comm.rank());
  if (input.size() > capacities[me]) {
    throw InvalidArgument(std::string(operation) + ": rank " + std::to_string(me) + " has " +
                          std::to_string(input.size()) + " bytes to send but room for " +
                          std::to_string(capacities[me]) +
                          ": the capacities must bound every rank's part");
  }
  const auto parts = place_parts(input, capacities, output, comm.rank());
  std::vector<std::size_t> received(capacities.size());
  exchange_parts(comm, tag, parts[me].first(input.size()), parts, false, received, timeout,
                 operation);
  return received;
}

}  // namespace qccl
