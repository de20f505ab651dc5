// Binomial-tree broadcast, pipelined in chunks. With virtual rank
// v = (rank - root) mod n, the parent of v > 0 is v minus its lowest set bit
// and the children are v + 2^j for every 2^j below that bit (all j for the
// root) that is < n. A rank forwards chunk c to its children as soon as it has
// received it, largest subtree first, so chunks stream down the tree.
#include "qccl/collectives/broadcast.h"

#include <vector>

#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {

void broadcast_bytes(Communicator& comm, std::span<std::byte> data, int root,
                     const CollectiveOptions& options) {
  constexpr std::string_view op = "broadcast";
  validate_options(options, op);
  const int n = comm.size();
  if (root < 0 || root >= n) {
    throw InvalidArgument("broadcast: root " + std::to_string(root) + " is outside 0.." +
                          std::to_string(n - 1));
  }
  const Timeout timeout = comm.timeout(options.timeout);
  Fingerprint fingerprint(op);
  fingerprint.add("root", root).add("byte count", static_cast<std::int64_t>(data.size()));

  run_collective(comm, fingerprint, timeout, [&](int tag) {
    if (n == 1 || data.empty()) return;
    const int v = (comm.rank() - root + n) % n;
    const int low_bit = v == 0 ? 0 : (v & -v);
    const int parent = v == 0 ? -1 : ((v - low_bit) + root) % n;
    int span = 1;  // the root's subtree: the smallest power of two >= n
    while (span < n) span <<= 1;
    std::vector<int> children;
    for (int bit = (v == 0 ? span : low_bit) >> 1; bit >= 1; bit >>= 1) {
      if (v + bit < n) children.push_back((v + bit + root) % n);
    }
    const std::size_t chunks =
        std::max<std::size_t>(1, (data.size() + options.chunk_bytes - 1) / options.chunk_bytes);
    const auto pieces = split_range({0, data.size()}, chunks, 1);
    Transport& transport = comm.transport();
    std::vector<RequestPtr> recvs;
    if (parent >= 0) {
      for (const Range& piece : pieces) {
        recvs.push_back(transport.irecv(parent, tag, data.subspan(piece.first, piece.count)));
      }
    }
    std::vector<RequestPtr> sends;
    for (std::size_t c = 0; c < pieces.size(); ++c) {
      if (parent >= 0) {
        comm.wait(*recvs[c], timeout, op);
        if (recvs[c]->bytes() != pieces[c].count) {
          throw CommError("broadcast: rank " + std::to_string(comm.rank()) + " received " +
                          std::to_string(recvs[c]->bytes()) + " bytes for a piece of " +
                          std::to_string(pieces[c].count) + " from rank " + std::to_string(parent));
        }
      }
      for (int child : children) {
        sends.push_back(transport.isend(child, tag, data.subspan(pieces[c].first, pieces[c].count)));
      }
    }
    for (auto& s : sends) comm.wait(*s, timeout, op);
  });
}

void broadcast(Communicator& comm, std::span<float> data, int root,
               const CollectiveOptions& options) {
  broadcast_bytes(comm, std::as_writable_bytes(data), root, options);
}

}  // namespace qccl
