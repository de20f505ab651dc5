// The lifetime of something that several Python threads use at once — the
// context and its world communicator, a DDP hook and its stream, a
// compressor's codec — and that one of them may close while the others
// still use it.
//
// Every operation holds a Lease for as long as it touches the protected
// thing (RAII: the lease ends with its scope, exception or not). close()
// first turns new operations away, then waits for the leases held, then
// frees: so nothing is freed under an operation in flight, and an operation
// that comes too late fails at once with an error naming who closed it.
//
// An exclusive lease is also a lock: one exclusive holder at a time (one
// thread drives a communicator or a codec at a time), the others wait for
// it in turn, each up to its own timeout, and fail at once if closing
// begins meanwhile. Plain leases never wait. Every wait here is bounded.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <utility>

#include "qccl/common/duration.h"

namespace qccl::python {

class Lifecycle {
  struct Held {
    std::string what;  // "allreduce_mean_ (global-qsgd:bits=8,...)", for messages
    Timeout timeout;   // what bounds the operation
    bool exclusive;
  };

 public:
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { end(); }

   private:
    friend class Lifecycle;
    Lease(Lifecycle* owner, std::list<Held>::iterator held) : owner_(owner), held_(held) {}
    void end();

    Lifecycle* owner_ = nullptr;
    std::list<Held>::iterator held_;
  };

  // `name` says what is closed in messages ("qccl", "this DDP hook"), and
  // `resource` what an exclusive lease holds ("qccl's world communicator").
  Lifecycle(std::string name, std::string resource)
      : name_(std::move(name)), resource_(std::move(resource)) {}
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  // Admits the operation `what`, bounded by `timeout`, for the lease's
  // lifetime. Once close() has begun: InvalidArgument naming the closer and
  // `fix`. Exclusive: waits up to `timeout` for the exclusive lease held by
  // another thread (TimeoutError naming it); call that without the GIL.
  Lease enter(const std::string& what, Timeout timeout, bool exclusive, const std::string& fix);

  // Closes (the first call's `reason` is the one later errors give after
  // the name, e.g. "was shut down (qccl.shutdown())"): turns new operations
  // away at once, waits for the leases held — up to `wait`, or the longest
  // timeout among them if that is longer — then runs `release` once, which
  // frees what the leases protect. If leases are still held then, calls
  // `overdue` (with what they are; it may make them fail sooner) and waits
  // twice as long again. A close() while another one releases waits for it,
  // up to four times as long. Call without the GIL.
  struct Closing {
    enum Outcome { released, leases_held, still_releasing } outcome = released;
    std::string in_flight;  // leases_held: what holds them
  };
  Closing close(const std::string& reason, Timeout wait, const std::function<void()>& release,
                const std::function<void(const std::string&)>& overdue = {});

  bool closing() const;  // close() has begun: new operations fail

 private:
  std::string closed_message(const std::string& fix) const;  // with mutex_ held
  std::string in_flight_locked() const;
  Timeout longest_lease_locked(Timeout at_least) const;
  void end(std::list<Held>::iterator held);

  const std::string name_, resource_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::list<Held> held_;
  bool exclusive_held_ = false;
  std::list<std::uint64_t> waiting_;  // threads waiting for the exclusive lease, in order
  std::uint64_t next_waiter_ = 0;
  bool closing_ = false, releasing_ = false, closed_ = false;
  std::string reason_;
};

}  // namespace qccl::python
