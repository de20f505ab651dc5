#include "qccl/engines/step_algorithm.h"

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/page_faults.h"
#include "qccl/engines/optimizers.h"

namespace qccl::engines {

namespace {

// The optimizer step taken part by part while the exchange goes on: each
// part's parameters are updated as soon as the engine has their means (the
// update of a parameter reads only its own gradient and state, so the bits
// are those of one step after the last part). The codecs' snapshot is
// taken before backward, while the parameters are as the update finds them.
void overlapped_step(StepContext& context, PartwiseOptimizer& partwise, StepOutcome& outcome) {
  const auto in_optimizer = [&outcome](const auto& work) {
    const auto start = Clock::now();
    const auto faults_before = thread_minor_faults();
    work();
    outcome.optimizer_faults += thread_minor_faults() - faults_before;
    outcome.optimizer += std::chrono::duration<double>(Clock::now() - start).count();
  };
  for (auto& group : context.optimizer.param_groups()) group.options().set_lr(context.lr);
  const bool feedback = context.next_lr > 0;
  if (feedback) in_optimizer([&] { context.engine.before_update(); });
  context.engine.compute_gradients_in_parts(
      context.loss, outcome.oracle, [&](std::span<const torch::Tensor> part) {
        in_optimizer([&] { partwise.step_parameters(part); });
      });
  if (feedback) in_optimizer([&] { context.engine.after_update(context.next_lr); });
}

}  // namespace

void GradientStep::step(StepContext& context, StepOutcome& outcome) {
  auto* partwise = dynamic_cast<PartwiseOptimizer*>(&context.optimizer);
  if (context.overlap_updates && partwise) {
    overlapped_step(context, *partwise, outcome);
    return;
  }
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
