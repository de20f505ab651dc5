#include "qccl/engines/step_algorithm.h"

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/page_faults.h"
#include "qccl/engines/optimizers.h"

namespace qccl::engines {

// The optimizer step, with the codecs' feedback around it. With a
// PartwiseOptimizer and overlapped updates it is taken part by part while
// the exchange goes on: each part's parameters are updated as soon as the
// engine has their means (the update of a parameter reads only its own
// gradient and state, so the bits are those of one step after the last
// part); otherwise as one step after the exchange. The codecs' snapshot is
// taken before backward, which leaves the parameters as the update finds
// them.
void GradientStep::step(StepContext& context, StepOutcome& outcome) {
  const auto in_optimizer = [&outcome](const auto& work) {
    const auto start = Clock::now();
    const auto faults_before = thread_minor_faults();
    work();
    outcome.optimizer_faults += thread_minor_faults() - faults_before;
    outcome.optimizer += seconds_since(start);
  };
  for (auto& group : context.optimizer.param_groups()) group.options().set_lr(context.lr);
  // A decaying schedule reaches 0 only after the run's last step, with no
  // next step to prepare.
  const bool feedback = context.next_lr > 0;
  if (feedback) in_optimizer([&] { context.engine.before_update(); });
  auto* partwise =
      context.overlap_updates ? dynamic_cast<PartwiseOptimizer*>(&context.optimizer) : nullptr;
  if (partwise) {
    context.engine.compute_gradients_in_parts(
        context.loss, outcome.oracle, [&](std::span<const torch::Tensor> part) {
          in_optimizer([&] { partwise->step_parameters(part); });
        });
  } else {
    context.engine.compute_gradients(context.loss, outcome.oracle);
    in_optimizer([&] { context.optimizer.step(); });
  }
  if (feedback) in_optimizer([&] { context.engine.after_update(context.next_lr); });
}

std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name) {
  if (name == "gradient") return std::make_unique<GradientStep>();
  throw InvalidArgument("unknown step algorithm '" + std::string(name) + "'; valid: gradient");
}

}  // namespace qccl::engines
