// Runs codec steps on a caller's process group (group_transport.h), one at
// a time, on the calling thread: a DDP hook's, or the compressors' of the
// process-group mode (qccl.Compressor under torchrun), which share one. The
// process-group mode has no stream of its own, so the group sees qccl's
// collectives in the order they are called, the same on every rank.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "group_transport.h"
#include "qccl/collectives/communicator.h"

namespace qccl::python {

class GroupRunner {
 public:
  // `ops` as GroupTransport takes it. A call after close() is told
  // "<what>: <owner> <reason>; <remedy>". Call with the GIL.
  GroupRunner(pybind11::object ops, Timeout timeout, std::string owner = "this DDP hook",
              std::string remedy = "create a new hook with qccl.ddp_hook() and register it on "
                                   "the model");

  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
  Timeout timeout() const { return timeout_; }
  std::uint64_t bytes_sent() const { return transport_->stats().bytes_sent; }

  // Runs `operation` on the group's communicator after any other thread's,
  // waiting for that one up to `wait` (default: the runner's timeout;
  // then TimeoutError naming `what`); InvalidArgument naming `what` once
  // closed. Call without the GIL.
  void run(const std::string& what, const std::function<void(Communicator&)>& operation,
           std::optional<Timeout> wait = std::nullopt);
  // Later runs raise, telling that the owner `reason` (e.g. "was
  // closed"); then waits up to the timeout for the run in flight, if any
  // (TimeoutError if it still runs). Call without the GIL.
  void close(const std::string& reason);

 private:
  bool closed(std::string* reason);

  Timeout timeout_;
  std::string owner_, remedy_;
  std::unique_ptr<GroupTransport> transport_;
  std::unique_ptr<Communicator> comm_;  // over transport_, so it ends first
  std::timed_mutex running_;  // held by the run in flight
  std::mutex state_;          // guards closed_
  std::string closed_;        // why, once closed
};

}  // namespace qccl::python
