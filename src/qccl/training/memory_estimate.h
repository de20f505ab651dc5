// How much memory a training run needs on one host, from its settings
// alone, so that a run that cannot fit is refused before anything is
// allocated (rather than dying in libtorch, or swapping, half-way through
// its first step). The estimate is a lower bound: it counts what every
// rank must hold — parameters, gradients, the exchange's buffers, the
// optimizer's state and the data — and leaves out activations, which
// depend on the batch and the model's shape.
#pragma once

#include <cstdint>
#include <string>

#include "qccl/training/train_config.h"

namespace qccl::engines {

struct MemoryEstimate {
  std::uint64_t parameters = 0;      // parameter_count_bound
  std::uint64_t per_rank_bytes = 0;  // what each rank holds
  // The program and libtorch, once per process (measured: about 180 MB for
  // the MLP on one rank, its data and model included).
  std::uint64_t per_process_bytes = 0;

  // `ranks` ranks in each of `processes` processes on this host.
  std::uint64_t host_bytes(std::uint64_t ranks, std::uint64_t processes) const {
    return processes * (per_process_bytes + ranks * per_rank_bytes);
  }
};

// For `ranks` ranks in all: the sharded engine's ranks each hold 1/ranks
// of the gradients and the optimizer's state, but the whole weights.
MemoryEstimate estimate_memory(const TrainConfig& config, int ranks);

// The options that set the model's size, for messages: "--hidden,
// --layers, --sequence-length" for the GPT; empty for the fixed models.
std::string model_size_options(const ModelConfig& config);

}  // namespace qccl::engines
