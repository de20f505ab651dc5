#include "qccl/engines/step_algorithm.h"

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"

namespace qccl::engines {

void GradientStep::step(StepContext& context, StepOutcome& outcome) {
  context.engine.compute_gradients(context.loss, outcome.oracle);
  const auto start = Clock::now();
  for (auto& group : context.optimizer.param_groups()) group.options().set_lr(context.lr);
  // A decaying schedule reaches 0 only after the run's last step, with no
  // next step to prepare.
  const bool feedback = context.next_lr > 0;
  if (feedback) context.engine.before_update();
  context.optimizer.step();
  if (feedback) context.engine.after_update(context.next_lr);
  outcome.optimizer += std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name) {
  if (name == "gradient") return std::make_unique<GradientStep>();
  throw InvalidArgument("unknown step algorithm '" + std::string(name) + "'; valid: gradient");
}

}  // namespace qccl::engines
