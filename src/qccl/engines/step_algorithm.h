// How one training step is made of gradient oracles, exchanges and updates.
// The trainer runs a StepAlgorithm against an Engine: one backward and one
// optimizer step is one instance (GradientStep); extra-gradient methods
// (Q-GenX: two oracle calls per step, the second at an extrapolated point)
// and engines that gather and scatter around each layer fit the same
// interface, since the engine carries out each oracle.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "qccl/common/export.h"
#include "qccl/engines/engine.h"

QCCL_API_BEGIN
namespace qccl::engines {

struct StepContext {
  Engine& engine;
  torch::optim::Optimizer& optimizer;
  // The forward pass on this rank's batch: returns the mean loss.
  std::function<torch::Tensor()> loss;
  double lr = 0;       // this step's size, from the schedule
  double next_lr = 0;  // the next step's (0 after the run's last step)
  // Update each part of the parameters as soon as its mean gradient has
  // arrived (when the optimizer is a PartwiseOptimizer), not after the last.
  bool overlap_updates = true;
};

struct StepOutcome {
  OracleResult oracle;   // summed over the step's oracles; loss of the first
  double optimizer = 0;  // seconds of updates and codec feedback
  std::uint64_t optimizer_faults = 0;  // minor page faults meanwhile
};

class StepAlgorithm {
 public:
  virtual ~StepAlgorithm() = default;
  virtual std::string name() const = 0;
  // Gradient oracles (each an exchange) per step.
  virtual int oracles_per_step() const = 0;
  // One step. Throws NonFiniteError before any update when an exchange saw
  // NaN or Inf on some rank (every rank throws; `outcome` keeps what was
  // measured, the loss included).
  virtual void step(StepContext& context, StepOutcome& outcome) = 0;
};

// One oracle, then one optimizer step with the schedule's size (SGD, Adam,
// AdamW: whatever `context.optimizer` is), with the codecs' feedback around
// it. With overlapped updates the step is taken part by part as the
// engine hands out the mean gradients, bit for bit the same.
class GradientStep final : public StepAlgorithm {
 public:
  std::string name() const override { return "gradient"; }
  int oracles_per_step() const override { return 1; }
  void step(StepContext& context, StepOutcome& outcome) override;
};

// "gradient"; throws InvalidArgument listing the valid names.
std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name);

}  // namespace qccl::engines
QCCL_API_END
