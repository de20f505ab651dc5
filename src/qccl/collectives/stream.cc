#include "qccl/collectives/stream.h"

#include "qccl/collectives/collective_call.h"
#include "qccl/common/errors.h"

namespace qccl {

Stream::Stream(Communicator& parent, std::string name)
    : comm_(parent.split(std::move(name))), thread_([this] { run(); }) {}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

Work Stream::submit(std::string description, std::function<void(Communicator&)> operation,
                    std::function<void(const Work&)> on_completion) {
  std::lock_guard lock(mutex_);
  if (stop_) throw InvalidArgument("stream '" + name() + "' is shutting down; submit before it ends");
  auto state = detail::make_work_state(
      "stream '" + name() + "' operation " + std::to_string(submitted_++) + " (" + description + ")",
      comm_);
  Work work(state);
  if (on_completion) work.on_completion(std::move(on_completion));  // not queued yet: cannot have run
  queue_.push_back({std::move(state), std::move(operation)});
  changed_.notify_all();
  return work;
}

// Runs queued operations in order until stopped with an empty queue. An
// operation that finds the communicator poisoned fails at once (CollectiveCall
// raises the original cause), so after a failure the rest drain quickly.
void Stream::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped, and everything submitted has run
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr failure;
    try {
      if (comm_->poisoned()) {
        throw CommError("stream '" + name() + "': not run: an earlier failure made the stream "
                        "unusable (" + comm_->poison_reason() + ")");
      }
      next.operation(*comm_);
    } catch (...) {
      failure = std::current_exception();
    }
    detail::complete_work(next.state, failure);
    lock.lock();
  }
}

}  // namespace qccl
