#include "lifecycle.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

std::string seconds(Timeout timeout) {
  std::ostringstream out;
  out << std::setprecision(3) << std::chrono::duration<double>(timeout).count() << " s";
  return out.str();
}

}  // namespace

Lifecycle::Lease& Lifecycle::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    end();
    owner_ = other.owner_;
    held_ = other.held_;
    other.owner_ = nullptr;
  }
  return *this;
}

void Lifecycle::Lease::end() {
  if (owner_ != nullptr) owner_->end(held_);
  owner_ = nullptr;
}

std::string Lifecycle::closed_message(const std::string& fix) const {
  return name_ + " " + reason_ + "; " + fix;
}

// An exclusive lease is granted in the order asked for: each waiter joins
// `waiting_`, and only the first of them takes the lease when it is free, so
// a thread that calls in a loop cannot starve another into its timeout. A
// waiter that gives up (timeout, or closing) leaves the line and wakes the
// others, so the next one in line moves up.
Lifecycle::Lease Lifecycle::enter(const std::string& what, Timeout timeout, bool exclusive,
                                  const std::string& fix) {
  std::unique_lock lock(mutex_);
  if (closing_) throw InvalidArgument(what + ": " + closed_message(fix));
  if (exclusive && (exclusive_held_ || !waiting_.empty())) {
    std::string holder;
    for (const Held& held : held_) {
      if (held.exclusive) holder = held.what;
    }
    const auto me = waiting_.insert(waiting_.end(), next_waiter_++);
    const bool mine = changed_.wait_until(lock, deadline_after(timeout), [&] {
      return closing_ || (!exclusive_held_ && waiting_.front() == *me);
    });
    waiting_.erase(me);
    changed_.notify_all();
    if (closing_) throw InvalidArgument(what + ": " + closed_message(fix));
    if (!mine) {
      throw TimeoutError(what + ": waited " + seconds(timeout) + " for " +
                         (holder.empty() ? "other calls" : holder) + " on another thread to "
                         "finish with " + resource_ + " (one call at a time uses it); raise the "
                         "timeout, or let one thread make these calls");
    }
  }
  if (exclusive) exclusive_held_ = true;
  held_.push_back({what, timeout, exclusive});
  return Lease(this, std::prev(held_.end()));
}

void Lifecycle::end(std::list<Held>::iterator held) {
  {
    std::lock_guard lock(mutex_);
    if (held->exclusive) exclusive_held_ = false;
    held_.erase(held);
  }
  changed_.notify_all();
}

// Closing, in four steps under one mutex and condition variable:
//  1. closing_ is set and waiters are woken, so enter() fails from now on,
//     including in threads that were waiting for the exclusive lease;
//  2. wait until no lease is held. The bound is the longest timeout of any
//     lease held, since each operation is bounded by its own; past it,
//     `overdue` may cut the operations short, and the wait runs once more,
//     twice as long (an operation that cannot be cut short inside its
//     current wait ends within that wait's timeout);
//  3. if another close() is releasing, wait for it to finish (what it frees
//     may wait for other processes: MPI_Finalize waits for every rank);
//  4. unless it has released, mark releasing_ (so a concurrent close()
//     waits rather than releases twice), run `release` outside the mutex,
//     and mark closed_. If release throws, releasing_ is cleared so that a
//     later close() can retry.
Lifecycle::Closing Lifecycle::close(const std::string& reason, Timeout wait,
                                    const std::function<void()>& release,
                                    const std::function<void(const std::string&)>& overdue) {
  std::unique_lock lock(mutex_);
  if (!closing_) {
    closing_ = true;
    reason_ = reason;
    changed_.notify_all();
  }
  const auto idle = [&] { return closed_ || held_.empty(); };
  if (!changed_.wait_until(lock, deadline_after(longest_lease_locked(wait)), idle)) {
    if (overdue && !releasing_ && !closed_) overdue(in_flight_locked());
    if (!changed_.wait_until(lock, deadline_after(2 * longest_lease_locked(wait)), idle)) {
      return {Closing::leases_held, in_flight_locked()};
    }
  }
  if (!changed_.wait_until(lock, deadline_after(4 * wait), [&] { return !releasing_; })) {
    return {Closing::still_releasing, ""};
  }
  if (closed_) return {};
  releasing_ = true;
  lock.unlock();
  try {
    release();
  } catch (...) {
    lock.lock();
    releasing_ = false;
    changed_.notify_all();
    throw;
  }
  lock.lock();
  releasing_ = false;
  closed_ = true;
  changed_.notify_all();
  return {};
}

bool Lifecycle::closing() const {
  std::lock_guard lock(mutex_);
  return closing_;
}

std::string Lifecycle::in_flight_locked() const {
  std::string list;
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (!list.empty()) list += std::next(it) == held_.end() ? " and " : ", ";
    list += it->what;
  }
  return list;
}

Timeout Lifecycle::longest_lease_locked(Timeout at_least) const {
  Timeout longest = at_least;
  for (const Held& held : held_) longest = std::max(longest, held.timeout);
  return longest;
}

}  // namespace qccl::python
