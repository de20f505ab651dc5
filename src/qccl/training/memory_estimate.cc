#include "qccl/training/memory_estimate.h"

namespace qccl::engines {
namespace {

constexpr std::uint64_t kFloatBytes = 4;
constexpr std::uint64_t kProcessBytes = std::uint64_t{128} << 20;

// fp32 tensors the optimizer keeps per parameter: SGD's momentum buffer,
// Adam's two moments.
std::uint64_t optimizer_slots(const TrainConfig& c) {
  if (c.optimizer == "adam" || c.optimizer == "adamw") return 2;
  return c.momentum > 0 ? 1 : 0;
}

}  // namespace

MemoryEstimate estimate_memory(const TrainConfig& c, int ranks) {
  MemoryEstimate estimate;
  estimate.parameters = parameter_count_bound(c);
  // Weights, then gradients, one exchange buffer of them and the optimizer.
  const std::uint64_t per_parameter = 2 + optimizer_slots(c);
  const std::uint64_t parameter_bytes = estimate.parameters * kFloatBytes;
  const std::uint64_t shares = c.engine == "sharded" ? static_cast<std::uint64_t>(ranks) : 1;
  estimate.per_rank_bytes =
      parameter_bytes + parameter_bytes * per_parameter / shares + dataset_bytes(c);
  estimate.per_process_bytes = kProcessBytes;
  return estimate;
}

std::string model_size_options(const ModelConfig& c) {
  if (c.model == "gpt") return "--hidden, --layers, --sequence-length";
  if (c.model == "char-lstm") return "--hidden";
  if (c.model == "recommender") return "--fields, --values-per-field";
  return "";
}

}  // namespace qccl::engines
