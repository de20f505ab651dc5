#include "qccl/tools/train_memory_check.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "qccl/common/errors.h"
#include "qccl/common/resident_memory.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"
#include "qccl/training/memory_estimate.h"

namespace qccl::tools {
namespace {

// A count OpenMPI gives its ranks in the environment (1 where it is absent:
// not under mpirun).
int mpirun_count(const char* variable) {
  const char* text = std::getenv(variable);
  const int n = text != nullptr ? std::atoi(text) : 1;
  return n >= 1 ? n : 1;
}

// A limit on the memory this process may use, and its name for messages.
struct MemoryLimit {
  double bytes = 0;  // 0: none known
  std::string what;
  std::string raise;  // how to raise it, where it can be
};

// What is left under this process's address-space limit (ulimit -v): the
// limit less what the process has mapped already.
MemoryLimit address_space_headroom() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return {};
  const double left = static_cast<double>(limit.rlim_cur) - static_cast<double>(mapped_bytes());
  return {std::max(left, 1.0), "this process's address-space limit (ulimit -v) leaves",
          "raise ulimit -v"};
}

// What is left under the cgroup's memory limit (cgroup v2: memory.max less
// memory.current), as in a container.
MemoryLimit cgroup_headroom() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  double current = 0;
  if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return {};
  const double left = std::strtod(max_text.c_str(), nullptr) - current;
  return {std::max(left, 1.0), "this control group's memory limit (memory.max) leaves",
          "raise the control group's memory.max"};
}

// The refusal: the estimate, the limit it exceeds and what to change.
[[noreturn]] void refuse(const engines::TrainConfig& config, const LaunchOptions& launch,
                         const engines::MemoryEstimate& estimate, std::uint64_t ranks_per_process,
                         std::uint64_t processes, double needed, const MemoryLimit& limit) {
  const bool threads = launch.ranks > 0;
  const std::uint64_t ranks_here = ranks_per_process * processes;
  std::string change;
  if (ranks_here > 1) {
    change = threads ? "--ranks (" + std::to_string(launch.ranks) + " in this process)"
                     : "the ranks on this host (" + std::to_string(processes) + ")";
  }
  const std::string sizes = engines::model_size_options(config);
  if (!sizes.empty()) change += (change.empty() ? "" : " or ") + ("the model's size (" + sizes + ")");
  if (!limit.raise.empty()) change += (change.empty() ? "" : ", ") + ("or " + limit.raise);
  if (change.empty()) change = "the other work on this machine";
  throw InvalidArgument(
      "train: --model " + config.model + " with " + std::to_string(estimate.parameters) +
      " parameters on " + std::to_string(ranks_here) + " rank(s) of this host needs at least " +
      format_gib(needed) + " (" + format_mib(static_cast<double>(estimate.per_rank_bytes)) +
      " per rank for parameters, gradients, exchange buffers, optimizer state and data, " +
      format_mib(static_cast<double>(estimate.per_process_bytes)) + " per process), and " + limit.what +
      " " + format_gib(limit.bytes) + " available; lower " + change +
      (ranks_here > 1 ? ", or spread the ranks over several hosts under mpirun" : ""));
}

}  // namespace

void check_training_fits(const engines::TrainConfig& config, const LaunchOptions& launch) {
  const bool threads = launch.ranks > 0;
  const std::uint64_t ranks_per_process = threads ? static_cast<std::uint64_t>(launch.ranks) : 1;
  const std::uint64_t processes = threads ? 1 : static_cast<std::uint64_t>(mpirun_count("OMPI_COMM_WORLD_LOCAL_SIZE"));
  const auto estimate = engines::estimate_memory(config, threads ? launch.ranks : mpirun_count("OMPI_COMM_WORLD_SIZE"));
  // The host's free memory holds every process here; the limits of this
  // process (and of its control group) hold this process.
  struct Check {
    MemoryLimit limit;
    double needed;
  };
  const double host = static_cast<double>(estimate.host_bytes(ranks_per_process, processes));
  const double process = static_cast<double>(estimate.host_bytes(ranks_per_process, 1));
  const Check checks[] = {{{available_memory_bytes(), "this machine has", ""}, host},
                          {address_space_headroom(), process},
                          {cgroup_headroom(), host}};
  for (const auto& [limit, needed] : checks) {
    if (limit.bytes <= 0 || needed <= limit.bytes) continue;
    refuse(config, launch, estimate, ranks_per_process, processes, needed, limit);
  }
}

}  // namespace qccl::tools
