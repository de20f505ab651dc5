#include "closable_stream.h"

#include "qccl/common/errors.h"

namespace qccl::python {

ClosableStream::ClosableStream(Communicator& world, std::string name, const std::string& owner,
                               Timeout timeout, std::string fix)
    : owner_(owner),
      lifecycle_(owner, owner),
      timeout_(timeout),
      fix_(std::move(fix)),
      stream_(std::make_unique<Stream>(world, std::move(name))) {}

// Whoever holds a lease also holds a reference, so none is held here.
ClosableStream::~ClosableStream() {
  try {
    close("was deleted");
  } catch (...) {
  }
}

Work ClosableStream::submit(const std::string& what, std::function<void(Communicator&)> operation,
                            std::function<void(const Work&)> on_completion) {
  const auto lease = lifecycle_.enter(what, timeout_, false, fix_);
  return stream_->submit(
      what,
      [this, operation = std::move(operation)](Communicator& comm) {
        struct Count {  // also when the operation throws
          std::atomic<std::uint64_t>& to;
          Communicator& comm;
          ~Count() { to.store(comm.data_bytes_sent()); }
        } count{bytes_sent_, comm};
        operation(comm);
      },
      std::move(on_completion));
}

void ClosableStream::close(const std::string& reason) {
  const auto closing = lifecycle_.close(reason, timeout_, [this] { stream_.reset(); });
  if (closing.outcome == Lifecycle::Closing::leases_held) {
    throw TimeoutError("closing " + owner_ + ": " + closing.in_flight + " on another thread still "
                       "holds it after " + to_string(timeout_) + "; new submissions fail");
  }
  if (closing.outcome == Lifecycle::Closing::still_releasing) {
    throw TimeoutError("closing " + owner_ + ": another thread's close still waits for its "
                       "queued operations after " + to_string(4 * timeout_) + "; new submissions "
                       "fail");
  }
}

}  // namespace qccl::python
