#include "qccl/experiments/variant_grid.h"

#include <chrono>
#include <iomanip>
#include <iostream>

#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/rounding_output.h"
#include "qccl/experiments/output_directory.h"
#include "qccl/reports/machine.h"

namespace qccl::tools {
namespace {

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
void check_settings_agree(Communicator& comm, const VariantGrid& grid) {
  std::string text = grid.experiment + ";";
  for (const auto& plan : grid.plans) text += plan_settings(plan).dump() + ";";
  for (const auto& v : grid.variants) text += v.name + "=" + v.codec + ",";
  for (auto seed : grid.seeds) text += std::to_string(seed) + " ";
  Fingerprint fingerprint("experiment settings");
  fingerprint.add_text("models, variants and seeds", text);
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

void validate_seeds(const std::vector<std::uint64_t>& seeds) {
  if (seeds.empty()) throw InvalidArgument("--seeds names no seed; give e.g. 1,2,3");
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (seeds[i] == seeds[j]) {
        throw InvalidArgument("--seeds: seed " + std::to_string(seeds[i]) +
                              " is listed twice; name each seed once");
      }
    }
  }
}

}  // namespace

nlohmann::json plan_settings(const RoundingModelPlan& plan) {
  const auto& c = plan.train;
  nlohmann::json json = {{"model", c.model},        {"steps", plan.steps},
                         {"eval_every", plan.eval_every}, {"batch_per_rank", c.batch},
                         {"optimizer", c.optimizer}, {"lr", c.lr},
                         {"lr_schedule", c.lr_schedule}, {"warmup_steps", c.warmup_steps},
                         {"momentum", c.momentum},  {"weight_decay", c.weight_decay},
                         {"algorithm", std::string(to_string(c.algorithm))}};
  if (c.model == "char-lstm" || c.model == "gpt") {
    json["hidden"] = c.hidden;
    json["sequence_length"] = c.sequence_length;
  }
  if (c.model == "gpt") json["layers"] = c.layers;
  return json;
}

engines::TrainConfig run_config(const RoundingModelPlan& plan, const RoundingVariant& variant,
                                std::uint64_t seed) {
  engines::TrainConfig c = plan.train;
  c.codec = CodecSpec::parse(variant.codec);
  c.seed = seed;
  c.epochs = static_cast<int>(plan.steps / plan.eval_every);
  c.max_steps_per_epoch = plan.eval_every;
  return c;
}

void validate_grid(const std::vector<RoundingModelPlan>& plans,
                   const std::vector<RoundingVariant>& variants,
                   const std::vector<std::uint64_t>& seeds) {
  validate_seeds(seeds);
  for (const auto& plan : plans) {
    if (plan.steps == 0) throw InvalidArgument("--steps must be at least 1");
    if (plan.eval_every == 0 || plan.steps % plan.eval_every != 0) {
      throw InvalidArgument("--eval-every " + std::to_string(plan.eval_every) +
                            " must be at least 1 and divide --steps " +
                            std::to_string(plan.steps));
    }
    for (const auto& variant : variants) engines::validate(run_config(plan, variant, 1));
  }
}

RoundingReport run_variant_grid(Communicator& comm, const VariantGrid& grid) {
  validate_grid(grid.plans, grid.variants, grid.seeds);
  check_settings_agree(comm, grid);
  prepare_output_directory(comm, grid.output,
                           grid.output.empty()
                               ? std::vector<std::string>{}
                               : rounding_output_files(grid.output, grid.experiment),
                           "--output");
  const bool root = comm.rank() == 0;
  RoundingReport report;
  report.experiment = grid.experiment;
  report.baseline = grid.baseline;
  report.ranks = comm.size();
  report.cpu = cpu_description();
  for (const auto& plan : grid.plans) {
    report.models.push_back({plan.train.model, plan_settings(plan)});
    for (const auto seed : grid.seeds) {
      for (const auto& variant : grid.variants) {
        report.runs.push_back(train_once(comm, plan, variant, seed));
        if (root && grid.progress) print_run(std::cerr, report.runs.back());
      }
    }
  }
  report.rows = rounding_rows(report.runs, report.baseline);
  if (root && !grid.output.empty()) report.files = write_rounding_outputs(report, grid.output);
  return report;
}

}  // namespace qccl::tools
