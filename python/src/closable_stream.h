// A stream (qccl/collectives/stream.h) that several Python threads submit
// to and any of them — or qccl.shutdown(), or the owner's destructor — may
// close at any time: submissions hold a lease (lifecycle.h), so close()
// turns later ones away with an error naming who closed it, waits for those
// being queued, lets every queued operation run (each bounded by its
// timeout; a failure completes its own Work), and then ends the
// stream's thread and communicator (Stream's destructor: each queued
// operation runs or, after a failure, fails at once).
//
// The context keeps a weak reference to it, separate from its owner's, so
// qccl.shutdown() finds it even while the owner is being deleted, and then
// waits for that close to finish rather than freeing MPI under it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "context.h"
#include "lifecycle.h"
#include "qccl/collectives/stream.h"

namespace qccl::python {

class ClosableStream final : public Closable {
 public:
  // Splits the stream `name` from `world` (collective). `owner` names it in
  // errors ("this DDP hook"); `timeout` bounds the wait for the queued
  // operations at close; `fix` says what to do instead of using it closed.
  ClosableStream(Communicator& world, std::string name, const std::string& owner,
                 Timeout timeout, std::string fix);
  ~ClosableStream() override;

  // Queues `operation` (Stream::submit). InvalidArgument once closed.
  Work submit(const std::string& what, std::function<void(Communicator&)> operation,
              std::function<void(const Work&)> on_completion = {});
  // Data bytes sent by the operations completed so far, also after the
  // stream ended.
  std::uint64_t bytes_sent() const { return bytes_sent_.load(); }
  // Idempotent, from any thread; TimeoutError if a submission on another
  // thread still holds it after the timeout. Call without the GIL.
  void close(const std::string& reason) override;

 private:
  std::string owner_;
  Lifecycle lifecycle_;
  Timeout timeout_;
  std::string fix_;
  std::atomic<std::uint64_t> bytes_sent_{0};  // set on the stream's thread
  std::unique_ptr<Stream> stream_;  // reset by close() once no lease is held
};

}  // namespace qccl::python
