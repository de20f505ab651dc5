// What each rank of a process is doing, watched. Two failures carry no
// context of their own and need this record:
//  - an allocation that fails deep inside libtorch or OpenBLAS throws a
//    bare std::bad_alloc: the rank's current activity ("step 12: forward
//    and backward") says where memory ran out;
//  - an allocator that cannot get memory may retry forever instead of
//    failing (OpenBLAS's does, spinning at 100% CPU): a rank that computes
//    in one activity longer than the bound (--timeout) ends the process
//    with a message, so that no run hangs in computation.
// Waits on peers do not count: they have their own timeouts. A thread that
// waits (Communicator::wait, Work::wait) marks it with a Wait, which stops
// its activity's clock; the clock starts again when the wait ends.
//
// One watch serves every rank of a process (one slot per rank); a watching
// thread checks the slots a few times per bound. Scopes never allocate,
// so they work when memory has run out, and the message is written
// without allocating.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class ProgressWatch {
  struct Slot;

 public:
  // Slots for ranks first_rank..first_rank+ranks-1 (this process's); a
  // rank computing in one activity for longer than `bound` ends the
  // process with `exit_code` after printing why.
  ProgressWatch(int first_rank, int ranks, Timeout bound, int exit_code);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  // Marks `rank` busy with `what` (a string literal or one that outlives
  // the scope) of step `step` (-1: none) for the scope's life, then
  // restores what it was doing before. A scope left by an exception is
  // recorded as where that exception began. A null watch does nothing.
  class Scope {
   public:
    Scope(ProgressWatch* watch, int rank, const char* what, std::int64_t step = -1);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Slot* slot_;
    const char* previous_what_;
    std::int64_t previous_step_, previous_since_;
    Slot* enclosing_;  // the thread's scope before this one
    int exceptions_;
  };

  // A wait on a peer by the calling thread: while it lasts, the thread's
  // current activity (if any) is not computing, so its clock stops.
  class Wait {
   public:
    Wait();
    ~Wait();
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;

   private:
    Slot* slot_ = nullptr;  // the activity paused; null: none
  };

  // "step 12: forward and backward": where rank `rank`'s latest exception
  // left a scope, or else what it is doing now; "" if neither is known.
  std::string activity(int rank) const;
  Timeout bound() const { return bound_; }

 private:
  struct Slot {
    std::atomic<const char*> what{nullptr};
    std::atomic<std::int64_t> step{-1};
    std::atomic<std::int64_t> since_ns{0};  // 0: idle
    std::atomic<const char*> failed_what{nullptr};
    std::atomic<std::int64_t> failed_step{-1};
  };

  static thread_local Slot* current_activity_;

  void watch();
  [[noreturn]] void stalled(int rank, std::int64_t busy_ns) const;

  Slot* slot(int rank) const {
    return rank >= first_rank_ && rank - first_rank_ < ranks_ ? &slots_[rank - first_rank_] : nullptr;
  }

  Timeout bound_;
  int exit_code_;
  std::unique_ptr<Slot[]> slots_;
  int first_rank_, ranks_;
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace qccl
QCCL_API_END
