#include "qccl/engines/step_algorithm.h"

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/page_faults.h"

namespace qccl::engines {

void GradientStep::step(StepContext& context, StepOutcome& outcome) {
  context.engine.compute_gradients(context.loss, outcome.oracle);
  const auto start = Clock::now();
  const auto faults_before = thread_minor_faults();
  for (auto& group : context.optimizer.param_groups()) group.options().set_lr(context.lr);
  // A decaying schedule reaches 0 only after the run's last step, with no
  // next step to prepare.
  const bool feedback = context.next_lr > 0;
  if (feedback) context.engine.before_update();
  context.optimizer.step();
  if (feedback) context.engine.after_update(context.next_lr);
  outcome.optimizer_faults += thread_minor_faults() - faults_before;
  outcome.optimizer += std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name) {
  if (name == "gradient") return std::make_unique<GradientStep>();
  throw InvalidArgument("unknown step algorithm '" + std::string(name) + "'; valid: gradient");
}

}  // namespace qccl::engines
