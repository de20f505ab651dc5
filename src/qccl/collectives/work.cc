#include "qccl/collectives/work.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/common/errors.h"
#include "qccl/common/progress_watch.h"

namespace qccl {
namespace detail {

struct WorkState {
  std::string description;
  // The stream's communicator, cancelled by a timed-out wait; weak, since
  // the stream may end (and with it the communicator) once the work is done.
  std::weak_ptr<Communicator> comm;
  std::mutex mutex;
  std::condition_variable finished;
  bool ended = false;  // the operation has run; failure is final
  bool done = false;   // and so have the callbacks registered before it ended
  std::exception_ptr failure;
  std::exception_ptr callback_failure;
  std::vector<std::function<void(const Work&)>> callbacks;
};

std::shared_ptr<WorkState> make_work_state(std::string description,
                                           std::weak_ptr<Communicator> comm) {
  auto state = std::make_shared<WorkState>();
  state->description = std::move(description);
  state->comm = std::move(comm);
  return state;
}

namespace {

// Runs one callback; keeps its exception for the handle's next wait.
void run_callback(const std::shared_ptr<WorkState>& state,
                  const std::function<void(const Work&)>& callback) {
  try {
    callback(Work(state));
  } catch (...) {
    std::lock_guard lock(state->mutex);
    if (!state->callback_failure) state->callback_failure = std::current_exception();
  }
}

}  // namespace

// The callbacks run before waiters are released, so what they do (copying a
// bucket's mean into a gradient) is visible to whoever waited.
void complete_work(const std::shared_ptr<WorkState>& state, std::exception_ptr failure) {
  std::vector<std::function<void(const Work&)>> callbacks;
  {
    std::lock_guard lock(state->mutex);
    state->failure = std::move(failure);
    state->ended = true;
    callbacks.swap(state->callbacks);
  }
  for (const auto& callback : callbacks) run_callback(state, callback);
  {
    std::lock_guard lock(state->mutex);
    state->done = true;
  }
  state->finished.notify_all();
}

}  // namespace detail

std::string Work::describe() const { return state_ ? state_->description : "(no operation)"; }

bool Work::completed() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mutex);
  return state_->ended;
}

bool Work::test() const {
  if (!state_) throw InvalidArgument("test() on an empty Work handle");
  std::lock_guard lock(state_->mutex);
  if (!state_->done) return false;
  if (state_->failure) std::rethrow_exception(state_->failure);
  if (state_->callback_failure) std::rethrow_exception(state_->callback_failure);
  return true;
}

// A wait that times out cancels the stream, then waits for the operation to
// stop: at its next point-to-point wait (within milliseconds), or at the end
// of a transport-level collective that cannot be abandoned (MPI), which its
// own timeout bounds — the stream's, unless the operation set a longer one.
void Work::wait(Timeout timeout) const {
  if (!state_) throw InvalidArgument("wait() on an empty Work handle");
  if (timeout.count() < 0) {
    throw InvalidArgument("Work::wait: negative timeout " + to_string(timeout));
  }
  const ProgressWatch::Wait waiting;  // on a peer: not computation
  std::unique_lock lock(state_->mutex);
  const bool done = state_->finished.wait_until(lock, deadline_after(timeout),
                                                [&] { return state_->done; });
  if (!done) {
    const std::string reason = state_->description + " was abandoned: it did not complete within " +
                               to_string(timeout);
    lock.unlock();
    const auto comm = state_->comm.lock();  // null: the stream ended, so the operation did
    if (comm) comm->cancel(reason);
    lock.lock();
    const Timeout stop_bound = comm ? comm->options().timeout : Timeout(0);
    const bool stopped = state_->finished.wait_until(lock, deadline_after(stop_bound),
                                                     [&] { return state_->done; });
    throw TimeoutError(reason + "; its stream is cancelled, so later operations on it fail" +
                       (stopped ? std::string()
                                : " (the operation is still inside a transport-level "
                                  "collective that cannot be abandoned: its buffers stay in "
                                  "use until completed() is true)"));
  }
  if (state_->failure) std::rethrow_exception(state_->failure);
  if (state_->callback_failure) std::rethrow_exception(state_->callback_failure);
}

std::exception_ptr Work::exception() const {
  if (!state_) return nullptr;
  std::lock_guard lock(state_->mutex);
  return state_->failure;
}

void Work::on_completion(std::function<void(const Work&)> callback) const {
  if (!state_) throw InvalidArgument("on_completion() on an empty Work handle");
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->ended) {
      state_->callbacks.push_back(std::move(callback));
      return;
    }
  }
  detail::run_callback(state_, callback);
}

}  // namespace qccl
