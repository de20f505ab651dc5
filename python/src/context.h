// What `qccl.init()` creates: MPI's lifetime in this process, the world
// communicator over mpirun's ranks, and what else runs on it (the streams
// of DDP hooks). close() ends them in order — the hooks' streams, then the
// communicator, then MPI — and every later use says qccl was shut down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::python {

// Something that runs on the context's communicator and must stop before
// it goes (a hook's stream).
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close() = 0;
};

class Context {
 public:
  // Initialises MPI (unless the program already did) with `timeout_seconds`
  // bounding every wait.
  explicit Context(double timeout_seconds);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string thread_level() const;
  double timeout_seconds() const { return timeout_seconds_; }
  // The world communicator; InvalidArgument once closed.
  Communicator& communicator();
  // A communicator of its own, split from the world (collective: every rank
  // splits in the same order).
  std::unique_ptr<Communicator> split(const std::string& name);
  // Registers `user` to be closed first by close().
  void add_user(std::weak_ptr<Closable> user);
  // Ends everything (idempotent); call without the GIL.
  void close();
  bool closed() const { return comm_ == nullptr; }

 private:
  double timeout_seconds_;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<MpiRuntime> runtime_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Communicator> comm_;
  std::mutex users_mutex_;
  std::vector<std::weak_ptr<Closable>> users_;
};

// A timeout in seconds as qccl's Timeout; InvalidArgument unless positive
// and finite.
Timeout timeout_from_seconds(double seconds, const char* what);

}  // namespace qccl::python
