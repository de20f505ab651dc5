// A stream of collective operations that runs beside the caller: a
// communicator split from the caller's (its own tags, call sequence,
// fingerprints and poison, on a duplicate of the transport) and a thread that
// runs the operations submitted to it one at a time, in submission order.
// submit() returns at once with a Work handle.
//
// Every rank must submit the same operations to its streams in the same
// order (each stream is a communicator). Operations on different streams run
// at the same time without crosstalk; a failure or a timed-out wait poisons
// only its own stream.
//
// Progress on MPI: a stream's thread drives its own transfers by polling
// them (OpenMPI has no progress thread for shared memory or TCP), and since
// MPI's progress engine is per process, any thread waiting inside MPI also
// advances every other stream's transfers. All MPI calls of the process take
// one lock (see mpi_transport.h), so this works at MPI_THREAD_SERIALIZED.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/work.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Stream {
 public:
  // Splits `parent` (collective: every rank creates its streams in the same
  // order) and starts the stream's thread.
  Stream(Communicator& parent, std::string name);
  // Lets the submitted operations finish (each is bounded by its timeout;
  // after a failure the rest fail at once), then stops the thread.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `operation`, to run on the stream's thread with the stream's
  // communicator after every operation submitted before it. `description`
  // names it in errors ("bucket 2"). `on_completion`, if given, is
  // registered before the operation can run, so it always runs on the
  // stream's thread right after it (see Work::on_completion). Thread-safe.
  Work submit(std::string description, std::function<void(Communicator&)> operation,
              std::function<void(const Work&)> on_completion = {});

  const std::string& name() const { return comm_->name(); }
  // Data bytes the stream has sent so far (thread-safe; see
  // Communicator::data_bytes_sent).
  std::uint64_t data_bytes_sent() const { return comm_->data_bytes_sent(); }
  // The stream's communicator. Use it only inside submitted operations, or
  // while nothing is in flight.
  Communicator& communicator() { return *comm_; }

 private:
  struct Queued {
    std::shared_ptr<detail::WorkState> state;
    std::function<void(Communicator&)> operation;
  };
  void run();

  std::shared_ptr<Communicator> comm_;  // shared with the work handles (weakly)
  std::uint64_t submitted_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: started after every member above exists
};

}  // namespace qccl
QCCL_API_END
