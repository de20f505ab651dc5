// The options every command that runs on ranks takes, defined once: how
// many ranks run as threads (--ranks; none: the MPI world), the bound on
// every wait (--timeout), and where a command has them, the collective
// algorithm (--algo) and quiet output (--quiet); and for the hierarchical
// algorithm, the ranks per host (--ranks-per-host) and the algorithm
// between hosts (--between-hosts).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/duration.h"

namespace qccl::tools {

// The longest --timeout accepted: 30 days, in ms.
inline constexpr long kMaxTimeoutMs = 30L * 24 * 3600 * 1000;

struct LaunchOptions {
  int ranks = 0;  // > 0: this many ranks as threads of this process
  long timeout_ms = 300000;
  std::string algorithm = "ring";
  bool quiet = false;
  int ranks_per_host = 0;  // 0: from the transport (MPI: shared memory)
  std::string between_hosts = "ring";

  Timeout timeout() const { return Timeout(timeout_ms); }
  // The --algo value; InvalidArgument for an unknown name.
  Algorithm parsed_algorithm() const;
  // The --between-hosts value; InvalidArgument unless ring,
  // halving-doubling or native.
  Algorithm parsed_between_hosts() const;
  // The communicators' options: the timeout, the call check, the hosts.
  CommunicatorOptions communicator_options() const;
  // InvalidArgument for --ranks or --ranks-per-host below 0, a --timeout
  // outside 1 ms..30 days, or a bad --between-hosts.
  void check() const;
};

// What a command's --algo and --quiet say in its help; empty: the command
// has no such option.
struct LaunchHelp {
  std::string algorithm = "ring or halving-doubling (default ring)";
  std::string quiet;
};

// Adds --ranks, --timeout, --ranks-per-host and --between-hosts to
// `command`, and --algo and --quiet where `help` describes them.
void add_launch_options(CLI::App& command, LaunchOptions& options, const LaunchHelp& help = {});

}  // namespace qccl::tools
