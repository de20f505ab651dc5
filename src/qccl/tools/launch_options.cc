#include "qccl/tools/launch_options.h"

#include "qccl/common/errors.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

Algorithm LaunchOptions::parsed_algorithm() const { return parse_algorithm(algorithm); }

void LaunchOptions::check() const {
  if (ranks < 0) throw InvalidArgument("--ranks must be positive");
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
}

}  // namespace qccl::tools
