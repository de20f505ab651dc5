#include "qccl/engines/step_algorithm.h"

#include <algorithm>

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/page_faults.h"
#include "qccl/engines/optimizers.h"

namespace qccl::engines {

namespace {

// Adds the time and page faults of `work` to the outcome's optimizer part.
template <class Work>
void in_optimizer(StepOutcome& outcome, const Work& work) {
  const auto start = Clock::now();
  const auto faults_before = thread_minor_faults();
  work();
  outcome.optimizer_faults += thread_minor_faults() - faults_before;
  outcome.optimizer += seconds_since(start);
}

// One oracle and one optimizer step. With a PartwiseOptimizer and
// overlapped updates the step is taken part by part while the exchange goes
// on: each part's parameters are updated as soon as the engine has their
// means (the update of a parameter reads only its own gradient and state,
// so the bits are those of one step after the last part); otherwise as one
// step after the exchange. `before_update` runs on each part (or on all
// parameters) just before its update.
void oracle_then_update(StepContext& context, StepOutcome& outcome,
                        const PartReady& before_update) {
  auto* partwise =
      context.overlap_updates ? dynamic_cast<PartwiseOptimizer*>(&context.optimizer) : nullptr;
  if (partwise) {
    context.engine.compute_gradients_in_parts(
        context.loss, outcome.oracle, [&](std::span<const torch::Tensor> part) {
          in_optimizer(outcome, [&] {
            if (before_update) before_update(part);
            partwise->step_parameters(part);
          });
        });
  } else {
    context.engine.compute_gradients(context.loss, outcome.oracle);
    in_optimizer(outcome, [&] {
      if (before_update) before_update(context.engine.optimizer_parameters());
      context.optimizer.step();
    });
  }
}

void set_step_size(StepContext& context) {
  set_learning_rate(context.optimizer, context.lr);
}

}  // namespace

// The optimizer step, with the codecs' feedback around it. The codecs'
// snapshot is taken before backward, which leaves the parameters as the
// update finds them. A decaying schedule reaches 0 only after the run's
// last step, with no next step to prepare.
void GradientStep::step(StepContext& context, StepOutcome& outcome) {
  set_step_size(context);
  const bool feedback = context.next_lr > 0;
  if (feedback) in_optimizer(outcome, [&] { context.engine.before_update(); });
  context.oracle = 0;
  oracle_then_update(context, outcome, PartReady());
  if (feedback) in_optimizer(outcome, [&] { context.engine.after_update(context.next_lr); });
}

// Extra-gradient (step_algorithm.h; Q-GenX §3, Example 3.2, with the
// optimizer's step in place of the dual averaging's): the extrapolation
// from x_t, then the update from x_t again with the gradient taken at the
// extrapolated point. The second phase restores each part just before its
// update, after that part's oracle gradient has been computed at x_{t+1/2}.
void ExtraGradientStep::step(StepContext& context, StepOutcome& outcome) {
  set_step_size(context);
  const bool feedback = context.next_lr > 0;
  if (feedback) in_optimizer(outcome, [&] { context.engine.before_update(); });
  in_optimizer(outcome, [&] { save(context.engine.optimizer_parameters()); });
  context.oracle = 0;
  oracle_then_update(context, outcome, PartReady());
  context.oracle = 1;
  try {
    oracle_then_update(context, outcome,
                       [this](std::span<const torch::Tensor> part) { restore(part); });
  } catch (const NonFiniteError&) {
    restore(context.engine.optimizer_parameters());
    throw;
  }
  if (feedback) in_optimizer(outcome, [&] { context.engine.after_update(context.next_lr); });
}

void ExtraGradientStep::save(const std::vector<torch::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  const bool same = saved_.size() == parameters.size() &&
                    std::equal(parameters.begin(), parameters.end(), saved_.begin(),
                               [](const torch::Tensor& p, const torch::Tensor& s) {
                                 return p.sizes() == s.sizes();
                               });
  if (!same) {
    saved_.clear();
    index_.clear();
    for (const auto& p : parameters) saved_.push_back(torch::empty_like(p));
  }
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    index_[parameters[i].unsafeGetTensorImpl()] = i;
    saved_[i].copy_(parameters[i]);
  }
}

void ExtraGradientStep::restore(std::span<const torch::Tensor> parameters) {
  torch::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    const auto at = index_.find(p.unsafeGetTensorImpl());
    if (at == index_.end()) {
      throw InvalidArgument("extra-gradient step: a parameter the step did not save; the engine's "
                            "optimizer parameters changed inside a step");
    }
    auto target = p;  // a handle on the same tensor
    target.copy_(saved_[at->second]);
  }
}

std::unique_ptr<StepAlgorithm> make_step_algorithm(std::string_view name) {
  if (name == "gradient") return std::make_unique<GradientStep>();
  if (name == "extra-gradient") return std::make_unique<ExtraGradientStep>();
  throw InvalidArgument("unknown step algorithm '" + std::string(name) +
                        "'; valid: gradient, extra-gradient");
}

}  // namespace qccl::engines
