#include "qccl/common/progress_watch.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>

namespace qccl {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string describe(const char* what, std::int64_t step) {
  if (what == nullptr) return "";
  return step >= 0 ? "step " + std::to_string(step) + ": " + what : std::string(what);
}

}  // namespace

// The innermost activity the calling thread is in, for Wait: each thread
// marks only its own activities, so a thread's waits pause only its own.
thread_local ProgressWatch::Slot* ProgressWatch::current_activity_ = nullptr;

ProgressWatch::ProgressWatch(int first_rank, int ranks, Timeout bound, int exit_code)
    : bound_(bound),
      exit_code_(exit_code),
      slots_(std::make_unique<Slot[]>(static_cast<std::size_t>(ranks))),
      first_rank_(first_rank),
      ranks_(ranks) {
  watcher_ = std::thread([this] { watch(); });
}

ProgressWatch::~ProgressWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  watcher_.join();
}

// Checks every slot several times per bound (at most every half second):
// a rank computing in one activity longer than the bound is stalled.
void ProgressWatch::watch() {
  const auto period = std::clamp<Timeout>(bound_ / 8, Timeout(1), Timeout(500));
  std::unique_lock lock(mutex_);
  while (!stop_signal_.wait_for(lock, period, [this] { return stopping_; })) {
    const std::int64_t now = now_ns();
    const std::int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(bound_).count();
    for (int r = 0; r < ranks_; ++r) {
      const std::int64_t since = slots_[r].since_ns.load();
      if (since != 0 && now - since > limit) stalled(first_rank_ + r, now - since);
    }
  }
}

// Written into a buffer on the stack and out with write(2): memory may
// have run out, so nothing here allocates.
void ProgressWatch::stalled(int rank, std::int64_t busy_ns) const {
  const Slot& slot = *this->slot(rank);
  const char* what = slot.what.load();
  const std::int64_t step = slot.step.load();
  char step_text[32] = "";
  if (step >= 0) std::snprintf(step_text, sizeof step_text, "step %lld: ", static_cast<long long>(step));
  char message[1024];
  const int length = std::snprintf(
      message, sizeof message,
      "qccl: error: rank %d has been computing in %s%s for %lld ms, more than --timeout %lld ms, "
      "without finishing. Memory may have run out (an allocator that cannot get memory, such as "
      "OpenBLAS's, retries forever instead of failing) or the computation is stuck. Lower --batch, "
      "--ranks or the model's size, or give the run more memory (ulimit -v, other processes); a "
      "longer --timeout if the step is merely slow. The latest checkpoint is unchanged.\n",
      rank, step_text, what != nullptr ? what : "a computation",
      static_cast<long long>((busy_ns + 999999) / 1000000), static_cast<long long>(bound_.count()));
  if (length > 0) {
    [[maybe_unused]] const auto written =
        ::write(STDERR_FILENO, message, std::min<std::size_t>(static_cast<std::size_t>(length),
                                                              sizeof message - 1));
  }
  ::_exit(exit_code_);
}

std::string ProgressWatch::activity(int rank) const {
  const Slot* s = slot(rank);
  if (s == nullptr) return "";
  if (const char* failed = s->failed_what.load()) return describe(failed, s->failed_step.load());
  return describe(s->what.load(), s->step.load());
}

ProgressWatch::Scope::Scope(ProgressWatch* watch, int rank, const char* what, std::int64_t step)
    : slot_(watch != nullptr ? watch->slot(rank) : nullptr),
      previous_what_(nullptr),
      previous_step_(-1),
      previous_since_(0),
      enclosing_(current_activity_),
      exceptions_(std::uncaught_exceptions()) {
  if (slot_ == nullptr) return;
  current_activity_ = slot_;
  previous_what_ = slot_->what.exchange(what);
  previous_step_ = slot_->step.exchange(step);
  previous_since_ = slot_->since_ns.exchange(now_ns());
  slot_->failed_what = nullptr;
}

ProgressWatch::Scope::~Scope() {
  if (slot_ == nullptr) return;
  current_activity_ = enclosing_;
  if (std::uncaught_exceptions() > exceptions_ && slot_->failed_what.load() == nullptr) {
    slot_->failed_what = slot_->what.load();
    slot_->failed_step = slot_->step.load();
  }
  slot_->what = previous_what_;
  slot_->step = previous_step_;
  // An enclosing activity's clock restarts: the inner one was progress.
  slot_->since_ns = previous_since_ != 0 ? now_ns() : 0;
}

ProgressWatch::Wait::Wait() {
  Slot* slot = current_activity_;
  if (slot == nullptr) return;
  std::int64_t since = slot->since_ns.load();
  // Nested waits: only the outermost pauses and restarts the clock.
  if (since != 0 && slot->since_ns.compare_exchange_strong(since, 0)) slot_ = slot;
}

ProgressWatch::Wait::~Wait() {
  if (slot_ != nullptr) slot_->since_ns = now_ns();
}

}  // namespace qccl
