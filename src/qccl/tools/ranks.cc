#include "qccl/tools/ranks.h"

#include <cstdlib>
#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/transport/local_transport.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::tools {

int exit_code_of(const std::function<void()>& command) {
  try {
    command();
    return kExitOk;
  } catch (const NonFiniteError& e) {  // bad numbers in a run, not a bad command line
    std::cerr << "qccl: error: " << e.what() << "\n";
    return kExitError;
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "qccl: error: " << e.what() << "\n";
    return kExitError;
  }
}

// Runs `body` on every rank: N threads with --ranks N, else the MPI world.
// Returns the exit code; errors are printed once, and under MPI take the
// other ranks down rather than leave them to their timeouts.
int run_on_ranks(int ranks, Timeout timeout, int argc, char** argv,
                 const std::function<void(Communicator&)>& body) {
  const CommunicatorOptions options{timeout, true};
  if (ranks > 0) {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
      std::cerr << "qccl: --ranks runs ranks as threads of one process; do not combine it with "
                   "mpirun (drop one of the two)\n";
      return kExitUsage;
    }
    return exit_code_of([&] {
      run_in_process(ranks, [&](Transport& transport) {
        Communicator comm(transport, options);
        body(comm);
      });
    });
  }
  MpiRuntime runtime(&argc, &argv);
  auto transport = runtime.world_transport();
  try {
    Communicator comm(*transport, options);
    body(comm);
    return kExitOk;
  } catch (const std::exception& e) {
    // Mismatches and non-finite inputs are raised on every rank by
    // construction: each rank ends cleanly, and one of them reports it.
    if (dynamic_cast<const MismatchError*>(&e) || dynamic_cast<const NonFiniteError*>(&e)) {
      if (transport->rank() == 0) std::cerr << "qccl: error: " << e.what() << "\n";
      return kExitError;
    }
    std::cerr << "qccl: error on rank " << transport->rank() << ": " << e.what() << "\n";
    if (transport->size() > 1) transport->abort(e.what());
    return dynamic_cast<const InvalidArgument*>(&e) ? kExitUsage : kExitError;
  }
}

}  // namespace qccl::tools
