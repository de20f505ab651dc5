// The `qccl` command line.
#pragma once

namespace qccl::tools {

// Exit codes of the qccl program.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,         // a runtime failure (communication, timeout, mismatch)
  kExitUsage = 2,         // bad command line
  kExitWrongResults = 3,  // a benchmark's correctness check found wrong values
};

// Parses argv and runs the command; returns the exit code. Parsing happens
// before MPI starts, so --help, --version and usage errors need no mpirun.
int run_cli(int argc, char** argv);

}  // namespace qccl::tools
