// What `qccl.init()` creates: MPI's lifetime in this process, the world
// communicator over mpirun's ranks, and what else runs on it (the streams
// of DDP hooks). close() ends them in order — the hooks' streams, then the
// communicator, then MPI — and every later use says qccl was shut down.
//
// Python threads share the context: every use of the world communicator
// holds a WorldLease (lifecycle.h) for its duration, one at a time, since
// one thread drives a communicator at a time. close() from any thread turns
// new uses away at once, waits for the one in flight, and only then frees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lifecycle.h"
#include "qccl/collectives/communicator.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::python {

// Something that runs on the context's communicator and must stop before
// it goes (a hook's stream).
class Closable {
 public:
  virtual ~Closable() = default;
  // Ends it; `reason` is what later uses of it are told.
  virtual void close(const std::string& reason) = 0;
};

class Context {
 public:
  // The world communicator, held by one operation for the lease's lifetime.
  class WorldLease {
   public:
    Communicator& communicator() { return *comm_; }

   private:
    friend class Context;
    WorldLease(Lifecycle::Lease lease, Communicator* comm)
        : lease_(std::move(lease)), comm_(comm) {}
    Lifecycle::Lease lease_;
    Communicator* comm_;
  };

  // Initialises MPI (unless the program already did) with `timeout_seconds`
  // bounding every wait.
  explicit Context(double timeout_seconds);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& thread_level() const { return thread_level_; }
  double timeout_seconds() const { return timeout_seconds_; }
  Timeout timeout() const { return timeout_; }

  // The world communicator for the operation `what`, waiting up to
  // `timeout` (default: the context's) for another thread's operation on
  // it; InvalidArgument once close() has begun. Call without the GIL.
  WorldLease use_world(const std::string& what, std::optional<Timeout> timeout = std::nullopt);
  // Registers `user` to be closed by close(), before the communicator goes
  // (a weak reference: its owner's deletion closes it too). Call while
  // holding a WorldLease, so that close() cannot have passed it.
  void add_user(std::weak_ptr<Closable> user);
  // Ends everything (idempotent, from any thread): new operations fail at
  // once, the one in flight is waited for (up to the longer of the
  // context's timeout and its own; past that it is cancelled and waited for
  // as long again; TimeoutError if it still runs), then the hooks close and
  // MPI ends. Call without the GIL.
  void close();
  // Whether close() has begun.
  bool closed() const { return lifecycle_.closing(); }

 private:
  void release();

  double timeout_seconds_;
  Timeout timeout_;
  int rank_ = 0, size_ = 1;
  std::string thread_level_;
  std::unique_ptr<MpiRuntime> runtime_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Communicator> comm_;
  std::mutex users_mutex_;
  std::vector<std::weak_ptr<Closable>> users_;
  Lifecycle lifecycle_{"qccl", "qccl's world communicator"};
};

// A timeout in seconds as qccl's Timeout; InvalidArgument unless positive
// and finite.
Timeout timeout_from_seconds(double seconds, const char* what);

}  // namespace qccl::python
