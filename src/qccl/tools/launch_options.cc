#include "qccl/tools/launch_options.h"

#include "qccl/common/errors.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

Algorithm LaunchOptions::parsed_algorithm() const { return parse_algorithm(algorithm); }

Algorithm LaunchOptions::parsed_between_hosts() const {
  const Algorithm between = parse_algorithm(between_hosts);
  if (between == Algorithm::hierarchical) {
    throw InvalidArgument("--between-hosts must be ring, halving-doubling or native");
  }
  return between;
}

CommunicatorOptions LaunchOptions::communicator_options() const {
  CommunicatorOptions options{timeout(), true};
  options.ranks_per_host = ranks_per_host;
  return options;
}

void LaunchOptions::check() const {
  if (ranks < 0) throw InvalidArgument("--ranks must be positive");
  if (ranks_per_host < 0) throw InvalidArgument("--ranks-per-host must not be negative");
  parsed_between_hosts();
  // The bound is converted to nanoseconds on the way to every wait, which
  // overflowed past about 292 years; no wait needs more than 30 days.
  if (timeout_ms <= 0 || timeout_ms > kMaxTimeoutMs) {
    throw InvalidArgument("--timeout must be 1 to " + std::to_string(kMaxTimeoutMs) +
                          " ms (30 days), not " + std::to_string(timeout_ms));
  }
}

void add_launch_options(CLI::App& command, LaunchOptions& options, const LaunchHelp& help) {
  if (!help.quiet.empty()) command.add_flag("--quiet", options.quiet, help.quiet);
  if (!help.algorithm.empty()) command.add_option("--algo", options.algorithm, help.algorithm);
  add_ranks_option(command, options.ranks);
  command.add_option("--timeout", options.timeout_ms,
                     "bound on every wait, and on a training step's computation, in ms "
                     "(default 300000)");
  command.add_option("--ranks-per-host", options.ranks_per_host,
                     "--algo hierarchical: ranks per host, in consecutive groups (rank r on host "
                     "r / N); default: under mpirun the ranks that share memory, with --ranks "
                     "one per host");
  command.add_option("--between-hosts", options.between_hosts,
                     "--algo hierarchical: the algorithm between hosts, ring, "
                     "halving-doubling or native (default ring)");
}

}  // namespace qccl::tools
