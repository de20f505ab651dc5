// Running a command's body on every rank, and mapping failures to exit codes.
#pragma once

#include <functional>

#include "qccl/collectives/communicator.h"

namespace qccl::tools {

// Runs `command` and maps its failures to exit codes: a bad argument is a
// usage error, anything else a runtime error; both are printed once.
int exit_code_of(const std::function<void()>& command);

// Runs `body` on every rank: N threads with `ranks` = N > 0, else the MPI
// world (MPI starts here, after parsing). Returns the exit code; errors are
// printed once, and under MPI take the other ranks down rather than leave
// them to their timeouts.
int run_on_ranks(int ranks, Timeout timeout, int argc, char** argv,
                 const std::function<void(Communicator&)>& body);

}  // namespace qccl::tools
