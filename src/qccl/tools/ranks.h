// Running a command's body on every rank, and mapping failures to exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

// Ranks run as threads of one process (--ranks) hold a copy of the work
// each; beyond this many the command is refused up front, naming the limit
// (more ranks run as processes under mpirun).
inline constexpr int kMaxInProcessRanks = 1024;

// Adds `--ranks N` to `command`: N ranks as threads of this process, 1 to
// kMaxInProcessRanks. 0 is a value like any other, and refused — not read
// as "run under MPI", which is what leaving the option out means.
CLI::Option* add_ranks_option(CLI::App& command, int& ranks, const std::string& description =
                                  "run N ranks as threads of this process instead of under mpirun");

// MemAvailable from /proc/meminfo, in bytes; 0 when unknown.
double available_memory_bytes();

// Refuses, before anything is allocated, a run whose buffers (`bytes` in
// this process) exceed the memory the kernel reports available
// (MemAvailable), naming `options` — the settings that set the size — and
// both amounts. Does nothing where /proc/meminfo cannot be read.
void check_fits_in_memory(double bytes, const std::string& options);

// Runs `command` and maps its failures to exit codes: a bad argument is a
// usage error, anything else a runtime error; both are printed once.
int exit_code_of(const std::function<void()>& command);

// How a launch's ranks run, for reports: "in-process transport", "mpi
// transport (thread level multiple)".
struct Launch {
  std::string transport;
};

// Who reports a mismatch (raised on every rank alike): rank 0, or every
// rank under MPI, each naming its own settings (bench, whose ranks may be
// launched with different ones).
enum class MismatchReport { rank_zero, every_rank };

// The launcher every command runs through: `body` on every rank, N threads
// with `ranks` = N > 0, else the MPI world (MPI starts here, after
// parsing). Returns the body's exit code (rank 0's for threads, this
// rank's under MPI); errors are printed once (mismatches as `report`
// says), and under MPI take the other ranks down rather than leave them to
// their timeouts.
int launch_on_ranks(int ranks, CommunicatorOptions options, int argc, char** argv,
                    const std::function<int(Communicator&, const Launch&)>& body,
                    MismatchReport report = MismatchReport::rank_zero);

// The same for a body that succeeds or throws, with the call check on,
// on the ranks, timeout and hosts of `launch`.
int run_on_ranks(const LaunchOptions& launch, int argc, char** argv,
                 const std::function<void(Communicator&)>& body);

}  // namespace qccl::tools
