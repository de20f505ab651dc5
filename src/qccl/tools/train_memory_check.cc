#include "qccl/tools/train_memory_check.h"

#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <string>

#include "qccl/common/errors.h"
#include "qccl/tools/ranks.h"
#include "qccl/training/memory_estimate.h"

namespace qccl::tools {
namespace {

std::string gib(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << bytes / double(1 << 30) << " GiB";
  return text.str();
}

std::string mib(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(0) << bytes / double(1 << 20) << " MiB";
  return text.str();
}

// Ranks started on this host by mpirun (1 where the variable is absent).
int local_processes() {
  const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int n = size != nullptr ? std::atoi(size) : 1;
  return n >= 1 ? n : 1;
}

int world_ranks(const LaunchOptions& launch) {
  if (launch.ranks > 0) return launch.ranks;
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const int n = size != nullptr ? std::atoi(size) : 1;
  return n >= 1 ? n : 1;
}

}  // namespace

void check_training_fits(const engines::TrainConfig& config, const LaunchOptions& launch) {
  const double available = available_memory_bytes();
  if (available <= 0) return;
  const bool threads = launch.ranks > 0;
  const std::uint64_t ranks_per_process = threads ? static_cast<std::uint64_t>(launch.ranks) : 1;
  const std::uint64_t processes = threads ? 1 : static_cast<std::uint64_t>(local_processes());
  const auto estimate = engines::estimate_memory(config, world_ranks(launch));
  const double needed = static_cast<double>(estimate.host_bytes(ranks_per_process, processes));
  if (needed <= available) return;
  const std::uint64_t ranks_here = ranks_per_process * processes;
  std::string change;
  if (ranks_here > 1) {
    change = threads ? "--ranks (" + std::to_string(launch.ranks) + " in this process)"
                     : "the ranks on this host (" + std::to_string(processes) + ")";
  }
  const std::string sizes = engines::model_size_options(config);
  if (!sizes.empty()) change += (change.empty() ? "" : " or ") + ("the model's size (" + sizes + ")");
  if (change.empty()) change = "the other work on this machine";
  throw InvalidArgument(
      "train: --model " + config.model + " with " + std::to_string(estimate.parameters) +
      " parameters on " + std::to_string(ranks_here) + " rank(s) of this host needs at least " +
      gib(needed) + " (" + mib(static_cast<double>(estimate.per_rank_bytes)) +
      " per rank for parameters, gradients, exchange buffers, optimizer state and data, " +
      mib(static_cast<double>(estimate.per_process_bytes)) + " per process), and this machine has " +
      gib(available) + " available; lower " + change +
      (ranks_here > 1 ? ", or spread the ranks over several hosts under mpirun" : ""));
}

}  // namespace qccl::tools
