// MPI transport (OpenMPI): nonblocking point-to-point on a private duplicate
// of MPI_COMM_WORLD, MPI_Iallreduce / MPI_Ibarrier for the transport-level
// reductions, and MPI_Abort for abort().
//
// Thread level and progress: MpiRuntime asks for MPI_THREAD_MULTIPLE and
// accepts MPI_THREAD_SERIALIZED. Every transport of the process — the
// world's and its duplicates (one MPI communicator each) — takes one
// process-wide lock around each MPI call, so any thread may use any of them
// and MPI never sees two calls at once: the engines drive several streams of
// collectives, each on its own thread and duplicate, while the training
// thread computes. OpenMPI has no asynchronous progress thread for shared
// memory or TCP: a transfer advances only while some thread of the rank is
// inside MPI, and progress is global, so any waiting thread advances every
// stream's transfers. Request::wait therefore polls MPI_Test (spinning, then
// yielding the core) until completion or its deadline, and every wait is
// bounded.
#pragma once

#include <memory>
#include <mutex>

#include "qccl/common/export.h"
#include "qccl/transport/transport.h"

QCCL_API_BEGIN
namespace qccl {

// Owns MPI's lifetime in a process: MPI_Init_thread in the constructor,
// MPI_Finalize in the destructor. If MPI was already initialised by the host
// program, it neither initialises nor finalises.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  // The thread level MPI provided ("multiple" or "serialized").
  std::string_view thread_level() const;
  // A transport over all ranks of the job (a duplicate of MPI_COMM_WORLD).
  std::unique_ptr<Transport> world_transport() const;

 private:
  bool owns_ = false;
  int provided_ = 0;
  // Taken around every MPI call of every transport of this process.
  std::shared_ptr<std::mutex> mpi_lock_ = std::make_shared<std::mutex>();
};

}  // namespace qccl
QCCL_API_END
