#include "qccl/experiments/intsgd/rounding_experiment.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"
#include "qccl/common/named_selection.h"
#include "qccl/experiments/intsgd/rounding_output.h"
#include "qccl/experiments/intsgd/rounding_variants.h"
#include "qccl/experiments/output_directory.h"
#include "qccl/reports/machine.h"

namespace qccl::tools {
namespace {

// One run's settings: the plan's, with the variant's codec and the seed;
// one "epoch" per evaluation, capped at eval_every steps, so that the
// trainer evaluates the test set every eval_every steps (each chunk takes
// the first steps of a fresh permutation of the training set).
engines::TrainConfig run_config(const RoundingModelPlan& plan, const RoundingVariant& variant,
                                std::uint64_t seed) {
  engines::TrainConfig c = plan.train;
  c.codec = CodecSpec::parse(variant.codec);
  c.seed = seed;
  c.epochs = static_cast<int>(plan.steps / plan.eval_every);
  c.max_steps_per_epoch = plan.eval_every;
  return c;
}

// The curve of a finished run; InvalidArgument when the trainer ran fewer
// steps than planned (a chunk longer than one pass over the data).
std::vector<RoundingPoint> points_of(const engines::TrainSummary& summary,
                                     const RoundingModelPlan& plan) {
  if (summary.steps != plan.steps) {
    throw InvalidArgument("--eval-every " + std::to_string(plan.eval_every) + ": " +
                          plan.train.model + " ran " + std::to_string(summary.steps) +
                          " steps, not " + std::to_string(plan.steps) +
                          ", because one pass over its data is shorter; choose a smaller "
                          "--eval-every (or --batch)");
  }
  std::vector<RoundingPoint> points;
  for (std::size_t i = 0; i < summary.epochs.size(); ++i) {
    const auto& e = summary.epochs[i];
    points.push_back({(i + 1) * plan.eval_every, e.train_loss, e.test_loss, e.test_metric});
  }
  return points;
}

RoundingRun train_once(Communicator& comm, const RoundingModelPlan& plan,
                       const RoundingVariant& variant, std::uint64_t seed) {
  const auto config = run_config(plan, variant, seed);
  RoundingRun run{plan.train.model, variant.name, config.codec.text(), seed, {}, false, "", 0, 0};
  const auto start = std::chrono::steady_clock::now();
  try {
    const auto summary = engines::train(comm, config);
    run.points = points_of(summary, plan);
    run.payload_bytes_per_step = summary.payload_bytes_per_step;
  } catch (const NonFiniteError& e) {  // on every rank alike: the run diverged
    run.diverged = true;
    run.failure = e.what();
  }
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

void print_run(std::ostream& out, const RoundingRun& run) {
  out << "== " << run.model << " " << run.variant << " seed " << run.seed << ": ";
  if (run.diverged) {
    out << "diverged";
  } else {
    out << metric_name_of(run.model) << " " << std::setprecision(4) << run.points.back().metric;
  }
  out << " (" << std::fixed << std::setprecision(1) << run.wall_seconds << " s)"
      << std::defaultfloat << std::endl;
}

// Models, variants, seeds and run lengths, compared across ranks before any
// run (engines::train compares each run's training settings itself).
void check_settings_agree(Communicator& comm, const RoundingExperimentConfig& config) {
  std::string text;
  for (const auto& plan : rounding_plans(config)) text += plan_settings(plan).dump() + ";";
  for (const auto& v : select_rounding_variants(config.variants)) text += v.name + ",";
  for (auto seed : config.seeds) text += std::to_string(seed) + " ";
  Fingerprint fingerprint("experiment settings");
  fingerprint.add_text("models, variants and seeds", text);
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

}  // namespace

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

nlohmann::json plan_settings(const RoundingModelPlan& plan) {
  const auto& c = plan.train;
  nlohmann::json json = {{"model", c.model},        {"steps", plan.steps},
                         {"eval_every", plan.eval_every}, {"batch_per_rank", c.batch},
                         {"optimizer", c.optimizer}, {"lr", c.lr},
                         {"lr_schedule", c.lr_schedule}, {"warmup_steps", c.warmup_steps},
                         {"momentum", c.momentum},  {"weight_decay", c.weight_decay},
                         {"algorithm", std::string(to_string(c.algorithm))}};
  if (c.model == "char-lstm") {
    json["hidden"] = c.hidden;
    json["sequence_length"] = c.sequence_length;
  }
  return json;
}

void validate(const RoundingExperimentConfig& config) {
  if (config.seeds.empty()) throw InvalidArgument("--seeds names no seed; give e.g. 1,2,3");
  for (std::size_t i = 0; i < config.seeds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (config.seeds[i] == config.seeds[j]) {
        throw InvalidArgument("--seeds: seed " + std::to_string(config.seeds[i]) +
                              " is listed twice; name each seed once");
      }
    }
  }
  const auto variants = select_rounding_variants(config.variants);
  for (const auto& plan : rounding_plans(config)) {
    if (plan.steps == 0) throw InvalidArgument("--steps must be at least 1");
    if (plan.eval_every == 0 || plan.steps % plan.eval_every != 0) {
      throw InvalidArgument("--eval-every " + std::to_string(plan.eval_every) +
                            " must be at least 1 and divide --steps " +
                            std::to_string(plan.steps));
    }
    for (const auto& variant : variants) engines::validate(run_config(plan, variant, 1));
  }
}

RoundingReport run_rounding_experiment(Communicator& comm, const RoundingExperimentConfig& config) {
  validate(config);
  check_settings_agree(comm, config);
  prepare_output_directory(comm, config.output,
                           config.output.empty() ? std::vector<std::string>{}
                                                 : rounding_output_files(config.output),
                           "--output");
  const bool root = comm.rank() == 0;
  RoundingReport report;
  report.ranks = comm.size();
  report.cpu = cpu_description();
  const auto variants = select_rounding_variants(config.variants);
  for (const auto& plan : rounding_plans(config)) {
    report.models.push_back({plan.train.model, plan_settings(plan)});
    for (const auto seed : config.seeds) {
      for (const auto& variant : variants) {
        report.runs.push_back(train_once(comm, plan, variant, seed));
        if (root && config.progress) print_run(std::cerr, report.runs.back());
      }
    }
  }
  report.rows = rounding_rows(report.runs);
  if (root && !config.output.empty()) report.files = write_rounding_outputs(report, config.output);
  return report;
}

}  // namespace qccl::tools
