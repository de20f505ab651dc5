#include "qccl/experiments/intsgd/rounding_experiment.h"

#include <algorithm>

#include "qccl/common/errors.h"
#include "qccl/common/named_selection.h"
#include "qccl/experiments/intsgd/rounding_variants.h"

namespace qccl::tools {

std::vector<std::string> rounding_model_names() { return {"cnn", "char-lstm"}; }

// The CNN: SGD with momentum 0.9 and weight decay 1e-4 as in the paper's
// ResNet18 runs (Appendix C.1), a short warm-up and cosine decay in place
// of its 5 warm-up epochs and step decay; 8 images per rank (128 per step
// on 16 ranks). The LSTM:
// one layer of 128 over 32 characters, 4 sequences per rank, plain SGD
// with a large step size as the paper's LSTM (Appendix C.1: 1.25 per
// worker, scaled by the 16 workers), here the best of 1, 3, 6 and 10 for
// full-precision SGD.
RoundingModelPlan rounding_model_defaults(const std::string& model) {
  RoundingModelPlan plan;
  auto& c = plan.train;
  c.model = model;
  c.optimizer = "sgd";
  c.lr_schedule = "cosine";
  c.progress = false;
  if (model == "cnn") {
    c.batch = 8;
    c.lr = 0.05;
    c.momentum = 0.9;
    c.weight_decay = 1e-4;
    c.warmup_steps = 50;
    plan.steps = 1200;
    plan.eval_every = 150;
  } else if (model == "char-lstm") {
    c.hidden = 128;
    c.sequence_length = 32;
    c.batch = 4;
    c.lr = 6.0;
    c.momentum = 0.0;
    c.warmup_steps = 20;
    plan.steps = 400;
    plan.eval_every = 50;
  } else {
    throw InvalidArgument("--models: unknown model '" + model + "'; valid: cnn, char-lstm");
  }
  return plan;
}

std::vector<RoundingModelPlan> rounding_plans(const RoundingExperimentConfig& config) {
  const auto models = select_named(rounding_model_names(), config.models,
                                   [](const std::string& m) { return m; }, "--models");
  std::vector<RoundingModelPlan> plans;
  const auto& o = config.overrides;
  for (const auto& model : models) {
    auto plan = rounding_model_defaults(model);
    if (o.steps) plan.steps = *o.steps;
    if (o.eval_every) plan.eval_every = *o.eval_every;
    if (o.batch) plan.train.batch = *o.batch;
    if (o.hidden) plan.train.hidden = *o.hidden;
    if (o.sequence_length) plan.train.sequence_length = *o.sequence_length;
    if (o.lr) plan.train.lr = *o.lr;
    // The warm-up is a small part of the default runs; a shorter run keeps
    // it to a tenth of its steps.
    plan.train.warmup_steps = std::min(plan.train.warmup_steps, plan.steps / 10);
    plan.train.threads = config.threads;
    plan.train.algorithm = config.algorithm;
    plans.push_back(plan);
  }
  return plans;
}

void validate(const RoundingExperimentConfig& config) {
  validate_grid(rounding_plans(config), select_rounding_variants(config.variants), config.seeds);
}

RoundingReport run_rounding_experiment(Communicator& comm, const RoundingExperimentConfig& config) {
  validate(config);
  return run_variant_grid(comm, {"intsgd-rounding", "sgd", rounding_plans(config),
                                 select_rounding_variants(config.variants), config.seeds,
                                 config.progress, config.output});
}

}  // namespace qccl::tools
