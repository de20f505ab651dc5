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
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "qccl/common/export.h"
#include "qccl/engines/engine.h"

QCCL_API_BEGIN
namespace qccl::engines {

struct StepContext {
  Engine& engine;
  torch::optim::Optimizer& optimizer;
  // The forward pass on this rank's batch: returns the mean loss. A loss
  // that draws a fresh batch for each oracle of a step reads `oracle`.
  std::function<torch::Tensor()> loss;
  double lr = 0;       // this step's size, from the schedule
  double next_lr = 0;  // the next step's (0 after the run's last step)
  // Update each part of the parameters as soon as its mean gradient has
  // arrived (when the optimizer is a PartwiseOptimizer), not after the last.
  bool overlap_updates = true;
  // Which oracle of the step `loss` is called for (0, 1, ...): set by the
  // step algorithm before each one.
  int oracle = 0;
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

// Extra-gradient (Korpelevich 1976) with any optimizer as its geometry:
// with Adam it is Gidel et al. (2019)'s ExtraAdam, the method
// Q-GenX §5 and Appendix H train their WGAN-GP with, and Q-GenX §3's
// dual-extrapolation template (Example 3.2) with Adam's steps. One step:
//   1. save x_t;
//   2. oracle at x_t, optimizer step: x_{t+1/2} (the extrapolation);
//   3. oracle at x_{t+1/2}; restore x_t; optimizer step with that gradient:
//      x_{t+1} (the update).
// The optimizer's state (Adam's moments and step count) is updated at both
// optimizer steps, as in Gidel et al.'s ExtraAdam. Each oracle is an
// exchange through the engine (Q-GenX: V_{k,t} and V_{k,t+1/2}, each
// quantized by its codec). With a PartwiseOptimizer and overlapped updates
// each part is restored and updated as soon as its mean arrives, bit for bit
// the same. The codecs' feedback sees x_{t+1} − x_t. A NonFiniteError at the
// first oracle comes before any update; at the second, the parameters are
// restored to x_t before it propagates, but the optimizer's state keeps the
// extrapolation's update.
class ExtraGradientStep final : public StepAlgorithm {
 public:
  std::string name() const override { return "extra-gradient"; }
  int oracles_per_step() const override { return 2; }
  void step(StepContext& context, StepOutcome& outcome) override;

 private:
  // x_t, one tensor per optimizer parameter (allocated by the first step),
  // and each parameter's index by its data, for restoring part by part.
  void save(const std::vector<torch::Tensor>& parameters);
  void restore(std::span<const torch::Tensor> parameters);

  std::vector<torch::Tensor> saved_;
  std::unordered_map<const void*, std::size_t> index_;
};

// "gradient" or "extra-gradient"; throws InvalidArgument listing the valid
// names.
std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name);

}  // namespace qccl::engines
QCCL_API_END
