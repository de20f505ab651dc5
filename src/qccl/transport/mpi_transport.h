// MPI transport (OpenMPI): nonblocking point-to-point on a private duplicate
// of MPI_COMM_WORLD, MPI_Iallreduce / MPI_Ibarrier for the transport-level
// reductions, and MPI_Abort for abort().
//
// Thread level and progress: MpiRuntime asks for MPI_THREAD_MULTIPLE and
// accepts MPI_THREAD_SERIALIZED; the transport serialises its own MPI calls
// with a mutex, so any thread may use it (the engines drive collectives from a
// communication thread while the training thread computes). OpenMPI has no
// asynchronous progress thread for shared memory or TCP: a transfer advances
// only while some thread of the rank is inside MPI. Request::wait therefore
// polls MPI_Test (spinning, then yielding the core) until completion or its
// deadline, so the waiting thread drives progress and every wait is bounded.
#pragma once

#include <memory>

#include "qccl/transport/transport.h"

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
};

}  // namespace qccl
