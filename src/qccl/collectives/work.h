// The handle of one operation submitted to a Stream, after PyTorch c10d's
// Work: test() and wait(timeout), the stored exception, and callbacks run
// when the operation completes. Copies share one state.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Communicator;

namespace detail {
struct WorkState;
}

class Work {
 public:
  Work() = default;  // an empty handle (valid() is false)
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  bool valid() const { return state_ != nullptr; }
  // "stream 'gradients' operation 12 (bucket 2)", for messages.
  std::string describe() const;
  // Whether the operation has finished, successfully or not.
  bool completed() const;
  // Whether the operation has finished and its callbacks have run; rethrows
  // its failure if it failed.
  bool test() const;
  // Waits until the operation has finished and its callbacks have run, and
  // rethrows its failure. If it has not finished within `timeout`, its
  // stream is cancelled: it is poisoned (operations queued on it fail at
  // once, naming this cause; other streams go on), and the operation in
  // flight stops at its next point-to-point wait. Once it no longer runs —
  // so no longer touches the caller's buffers — wait throws a TimeoutError
  // naming the stream and the operation. One inside a transport-level
  // collective that cannot be abandoned (MPI's own, algorithm native) runs
  // until that collective ends or times out; wait gives it the stream's
  // timeout, and if it still runs says so (then completed() tells when its
  // buffers are free).
  void wait(Timeout timeout) const;
  // The failure of a completed operation, or null.
  std::exception_ptr exception() const;
  // Runs `callback` once the operation has completed: on the stream's thread
  // right after it, or here and now if it already has. A callback must not
  // block on its own stream; an exception it throws is kept and rethrown by
  // the next wait() or test() on this handle.
  void on_completion(std::function<void(const Work&)> callback) const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

namespace detail {

// Shared by a Work and the stream that runs it.
struct WorkState;
std::shared_ptr<WorkState> make_work_state(std::string description,
                                           std::weak_ptr<Communicator> comm);
// Marks the operation finished (with `failure` if it failed), wakes waiters
// and runs the callbacks. Called by the stream's thread.
void complete_work(const std::shared_ptr<WorkState>& state, std::exception_ptr failure);

}  // namespace detail
}  // namespace qccl
QCCL_API_END
