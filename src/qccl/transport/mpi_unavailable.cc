// MpiRuntime in a build without MPI (a GPU machine's device-check build,
// CMakeLists.txt: QCCL_DEVICE_CHECK_ONLY): refuses clearly at start, so a
// program that needs MPI fails with the fix in its message; in-process
// ranks (run_in_process) need no MPI.
#include "qccl/common/errors.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl {

MpiRuntime::MpiRuntime(int*, char***) {
  throw Error("qccl was built without MPI (none was found when it was configured); install an "
              "MPI library (Debian: libopenmpi-dev) and configure again, or run in-process ranks");
}

MpiRuntime::~MpiRuntime() = default;

std::string_view MpiRuntime::thread_level() const { return "none"; }

std::unique_ptr<Transport> MpiRuntime::world_transport() const {
  throw Error("qccl was built without MPI: no MPI transport exists in this build");
}

}  // namespace qccl
