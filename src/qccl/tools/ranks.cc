#include "qccl/tools/ranks.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <string_view>

#include "qccl/common/errors.h"
#include "qccl/common/progress_watch.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/units.h"
#include "qccl/transport/local_transport.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::tools {

CLI::Option* add_ranks_option(CLI::App& command, int& ranks, const std::string& description) {
  const CLI::Validator in_process_count(
      [](std::string& value) -> std::string {
        int n = 0;
        const auto end = value.data() + value.size();
        const auto [at, error] = std::from_chars(value.data(), end, n);
        if (error == std::errc() && at == end && n >= 1 && n <= kMaxInProcessRanks) return {};
        return "in-process ranks are threads of this process: 1 to " +
               std::to_string(kMaxInProcessRanks) + ", not " + value +
               "; more ranks run as processes under mpirun (leave --ranks out)";
      },
      "1.." + std::to_string(kMaxInProcessRanks));
  return command.add_option("--ranks", ranks, description)->check(in_process_count);
}

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {  // "MemAvailable:   20971520 kB"
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024.0;
  }
  return 0;
}

void check_fits_in_memory(double bytes, const std::string& options) {
  const double available = available_memory_bytes();
  if (available > 0 && bytes > available) {
    throw InvalidArgument(options + " need about " + format_gib(bytes) + " of memory in this process, " +
                          "and this machine has " + format_gib(available) + " available: lower them");
  }
}

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

namespace {

// libtorch's CPU allocator reports a failed allocation as a c10::Error
// (not std::bad_alloc) whose text says so; this layer sees it as text.
bool is_allocation_failure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  // Errors the ranks agree on (a checkpoint not saved) carry the rank's
  // failure as text.
  const std::string_view what = e.what();
  return what.find("can't allocate memory") != std::string_view::npos ||
         what.find("Cannot allocate memory") != std::string_view::npos ||
         what.find("std::bad_alloc") != std::string_view::npos;
}

// Runs one rank's body; a failed allocation comes out as an
// OutOfMemoryError naming the rank, what it was doing (its progress
// watch's activity) and what to change.
int run_rank(const std::function<int(Communicator&, const Launch&)>& body, Communicator& comm,
             const Launch& launch, const ProgressWatch& watch) {
  try {
    return body(comm, launch);
  } catch (const std::exception& e) {
    if (!is_allocation_failure(e)) throw;
    const std::string where = watch.activity(comm.rank());
    // libtorch's message is followed by a backtrace: its first line says it.
    const std::string_view what = e.what();
    throw OutOfMemoryError(
        "memory ran out on rank " + std::to_string(comm.rank()) +
        (where.empty() ? "" : " in " + where) + " (" + std::string(what.substr(0, what.find('\n'))) +
        "): lower --batch, --ranks or the model's size, or give the run more memory "
        "(ulimit -v, other processes); the latest checkpoint is unchanged");
  }
}

}  // namespace

int launch_on_ranks(int ranks, CommunicatorOptions options, int argc, char** argv,
                    const std::function<int(Communicator&, const Launch&)>& body,
                    MismatchReport report) {
  if (ranks > 0) {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
      std::cerr << "qccl: --ranks runs ranks as threads of one process; do not combine it with "
                   "mpirun (drop one of the two)\n";
      return kExitUsage;
    }
    int code = kExitOk;
    ProgressWatch watch(0, ranks, options.timeout, kExitError);
    options.progress = &watch;
    const int failure = exit_code_of([&] {
      run_in_process(ranks, [&](Transport& transport) {
        Communicator comm(transport, options);
        const int rank_code = run_rank(body, comm, Launch{"in-process transport"}, watch);
        if (transport.rank() == 0) code = rank_code;
      });
    });
    return failure != kExitOk ? failure : code;
  }
  MpiRuntime runtime(&argc, &argv);
  auto transport = runtime.world_transport();
  ProgressWatch watch(transport->rank(), 1, options.timeout, kExitError);
  options.progress = &watch;
  try {
    Communicator comm(*transport, options);
    return run_rank(body, comm,
                    Launch{"mpi transport (thread level " + std::string(runtime.thread_level()) + ")"},
                    watch);
  } catch (const std::exception& e) {
    // Mismatches and non-finite inputs are raised on every rank by
    // construction: each rank ends cleanly, and one of them reports it.
    const bool mismatch = dynamic_cast<const MismatchError*>(&e) != nullptr;
    if (mismatch || dynamic_cast<const NonFiniteError*>(&e)) {
      const bool reports = transport->rank() == 0 || (mismatch && report == MismatchReport::every_rank);
      if (reports) std::cerr << "qccl: error: " << e.what() << "\n";
      return kExitError;
    }
    // A bad setting or input exits 2 under mpirun as in process: the abort
    // carries the exit code that mpirun returns.
    const int code = dynamic_cast<const InvalidArgument*>(&e) ? kExitUsage : kExitError;
    std::cerr << "qccl: error on rank " << transport->rank() << ": " << e.what() << "\n";
    if (transport->size() > 1) transport->abort(e.what(), code);
    return code;
  }
}

int run_on_ranks(const LaunchOptions& launch, int argc, char** argv,
                 const std::function<void(Communicator&)>& body) {
  return launch_on_ranks(launch.ranks, launch.communicator_options(), argc, argv,
                         [&](Communicator& comm, const Launch&) {
                           body(comm);
                           return kExitOk;
                         });
}

}  // namespace qccl::tools
