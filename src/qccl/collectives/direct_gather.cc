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
// sent. Each receive must bring exactly its part's size.
std::uint64_t exchange_parts(Communicator& comm, int tag, std::span<const std::byte> mine,
                             std::span<const std::span<std::byte>> parts, Timeout timeout,
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
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    Request& request = *receives[static_cast<std::size_t>(q)];
    comm.wait(request, timeout, operation);
    const std::size_t expected = parts[static_cast<std::size_t>(q)].size();
    if (request.bytes() != expected) {
      throw CommError(std::string(operation) + ": rank " + std::to_string(me) + " received " +
                      std::to_string(request.bytes()) + " bytes from rank " + std::to_string(q) +
                      " where its part has " + std::to_string(expected) +
                      ": the ranks disagree on the sizes of the call");
    }
  }
  for (auto& send : sends) comm.wait(*send, timeout, operation);
  return sent;
}

}  // namespace

std::uint64_t allgatherv_bytes_direct(Communicator& comm, int tag, std::span<const std::byte> input,
                                      std::span<const std::size_t> byte_counts,
                                      std::span<std::byte> output, Timeout timeout,
                                      std::string_view operation) {
  check_allgather_arguments(input.size(), output.size(), byte_counts, comm.size(), comm.rank());
  std::vector<std::span<std::byte>> parts;
  std::size_t at = 0;
  for (std::size_t count : byte_counts) {
    parts.push_back(output.subspan(at, count));
    at += count;
  }
  const auto me = static_cast<std::size_t>(comm.rank());
  if (!input.empty() && input.data() != parts[me].data()) {
    std::memmove(parts[me].data(), input.data(), input.size());
  }
  return exchange_parts(comm, tag, parts[me], parts, timeout, operation);
}

}  // namespace qccl
