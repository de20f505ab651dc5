#include "qccl/collectives/small_allreduce.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "qccl/collectives/direct_gather.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

void combine(std::span<std::int64_t> into, std::span<const std::int64_t> from, ReduceOp op) {
  for (std::size_t i = 0; i < into.size(); ++i) {
    into[i] = op == ReduceOp::max ? std::max(into[i], from[i]) : into[i] + from[i];
  }
}

// Up to kDirectGatherRanks ranks every rank sends its values straight to
// every other rank at once (direct_gather.h) and combines all of them: one
// round of n − 1 small messages, where recursive doubling takes log2(n)
// rounds, two more to fold a rank count that is no power of two.
void direct_allreduce(Communicator& comm, int tag, std::span<std::int64_t> values, ReduceOp op,
                      Timeout timeout, std::string_view operation) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> all(n * values.size());
  const std::vector<std::size_t> counts(n, values.size_bytes());
  const std::uint64_t sent = allgatherv_bytes_direct(comm, tag, std::as_bytes(values), counts,
                                                     std::as_writable_bytes(std::span(all)),
                                                     timeout, operation);
  const std::span<const std::int64_t> gathered(all);
  std::copy_n(gathered.begin(), values.size(), values.begin());
  for (std::size_t q = 1; q < n; ++q) {
    combine(values, gathered.subspan(q * values.size(), values.size()), op);
  }
  comm.count_exchange(sent);
}

}  // namespace

void small_allreduce(Communicator& comm, int tag, std::span<std::int64_t> values, ReduceOp op,
                     Timeout timeout, std::string_view operation) {
  if (op == ReduceOp::min) throw InvalidArgument("small_allreduce: MAX or SUM only");
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) {
    comm.count_exchange(0);
    return;
  }
  if (n <= kDirectGatherRanks) {
    direct_allreduce(comm, tag, values, op, timeout, operation);
    return;
  }
  const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const int m = n - p;
  Transport& transport = comm.transport();
  const auto bytes = std::as_writable_bytes(values);
  std::vector<std::int64_t> incoming(values.size());
  const auto incoming_bytes = std::as_writable_bytes(std::span(incoming));
  auto check_size = [&](const Request& request, int peer) {
    if (request.bytes() != bytes.size()) {
      throw CommError(std::string(operation) + ": rank " + std::to_string(r) + " received " +
                      std::to_string(request.bytes()) + " bytes from rank " +
                      std::to_string(peer) + " for " + std::to_string(bytes.size()) +
                      ": the ranks disagree on the call");
    }
  };
  std::uint64_t sent = 0;
  auto send = [&](int peer) {
    sent += bytes.size();
    return transport.isend(peer, tag, bytes);
  };
  auto receive = [&](int peer, std::span<std::byte> into) {
    auto request = transport.irecv(peer, tag, into);
    comm.wait(*request, timeout, operation);
    check_size(*request, peer);
  };

  if (r < 2 * m && r % 2 == 0) {  // folded: hand over, then take the result
    auto handed = send(r + 1);
    receive(r + 1, incoming_bytes);  // not into `values`, which may still be sending
    comm.wait(*handed, timeout, operation);
    std::copy(incoming.begin(), incoming.end(), values.begin());
    comm.count_exchange(sent);
    return;
  }
  if (r < 2 * m) {
    receive(r - 1, incoming_bytes);
    combine(values, incoming, op);
  }
  const int v = r < 2 * m ? r / 2 : r - m;
  auto real_rank = [&](int virtual_rank) {
    return virtual_rank < m ? 2 * virtual_rank + 1 : virtual_rank + m;
  };
  for (int mask = 1; mask < p; mask *= 2) {
    const int partner = real_rank(v ^ mask);
    auto received = transport.irecv(partner, tag, incoming_bytes);
    auto outgoing = send(partner);
    comm.wait(*received, timeout, operation);
    check_size(*received, partner);
    comm.wait(*outgoing, timeout, operation);
    combine(values, incoming, op);
  }
  if (r < 2 * m) comm.wait(*send(r - 1), timeout, operation);
  comm.count_exchange(sent);
}

}  // namespace qccl
