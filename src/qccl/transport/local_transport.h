// In-process transport: N ranks as threads of one process, for tests and for
// simulating many workers on one machine. Sends are eager (the payload is
// copied at once, straight into a posted receive when one matches), so an
// isend completes immediately and the sender may reuse its buffer.
#pragma once

#include <functional>
#include <memory>

#include "qccl/common/export.h"
#include "qccl/transport/transport.h"

QCCL_API_BEGIN
namespace qccl {

namespace detail {
struct LocalWorldState;
}

// The shared state of N in-process ranks. Create it once, hand
// transport(r) to the thread running rank r.
class LocalWorld {
 public:
  explicit LocalWorld(int size);
  int size() const;
  // The transport of rank `rank`; call once per rank.
  std::unique_ptr<Transport> transport(int rank);
  // Fails every pending and later operation of every rank with `reason`.
  void abort(std::string_view reason) noexcept;
  // Message contexts alive: the world's and its duplicates' (each freed once
  // every rank's transport on it has ended). For leak checks.
  std::size_t context_count() const;

 private:
  std::shared_ptr<detail::LocalWorldState> state_;
};

// Runs body(transport) for ranks 0..ranks-1, each on its own thread, and joins
// them. If any rank throws, the world is aborted so the others fail fast
// instead of waiting for their timeouts, and the first exception thrown is
// rethrown here once every thread has ended.
void run_in_process(int ranks, const std::function<void(Transport&)>& body);

}  // namespace qccl
QCCL_API_END
