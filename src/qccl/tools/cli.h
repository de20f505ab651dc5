// The `qccl` command line.
#pragma once

namespace qccl::tools {

// Parses argv and runs the command; returns the exit code. Parsing happens
// before MPI starts, so --help, --version and usage errors need no mpirun.
int run_cli(int argc, char** argv);

}  // namespace qccl::tools
