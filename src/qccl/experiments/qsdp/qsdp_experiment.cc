#include "qccl/experiments/qsdp/qsdp_experiment.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/reports/machine.h"
#include "qccl/experiments/qsdp/qsdp_output.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One variant's run: the shared settings with its codecs, one epoch capped
// at the experiment's steps.
engines::TrainConfig train_config_for(const QsdpExperimentConfig& config,
                                      const QsdpVariant& variant) {
  engines::TrainConfig one = config.train;
  one.model = "gpt";
  one.engine = "sharded";
  one.weights_codec = CodecSpec::parse(variant.weights_codec);
  one.codec = CodecSpec::parse(variant.gradients_codec);
  one.epochs = 1;
  one.max_steps_per_epoch = config.steps;
  one.evaluate_computed_weights = true;
  one.report_weight_ranges = true;
  return one;
}

// The variants with their codecs in canonical form (every parameter
// spelled out), as the reports show them.
std::vector<QsdpVariant> canonical_variants(const QsdpExperimentConfig& config) {
  auto variants = select_qsdp_variants(config.variants, refit_of(config));
  for (auto& v : variants) {
    v.weights_codec = CodecSpec::parse(v.weights_codec).text();
    v.gradients_codec = CodecSpec::parse(v.gradients_codec).text();
  }
  return variants;
}

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  std::string text;
  for (const auto s : seeds) text += (text.empty() ? "" : ",") + std::to_string(s);
  return text;
}

// The variants, steps, refit and seeds, compared across ranks before any
// run: a rank launched with another list fails every rank at once, naming
// it (engines::train compares the rest of each run's settings).
void check_settings_agree(Communicator& comm, const QsdpExperimentConfig& config) {
  std::string names;
  for (const auto& v : select_qsdp_variants(config.variants, refit_of(config))) {
    names += (names.empty() ? "" : ",") + v.name;
  }
  Fingerprint fingerprint("experiment settings");
  fingerprint.add_text("variants", "--variants " + names)
      .add_text("steps", "--steps " + std::to_string(config.steps) + ", --refit " +
                             std::to_string(refit_of(config)))
      .add_text("seeds", "--seeds " + seeds_text(seeds_of(config)));
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

// Rank 0 creates the output directory and checks that the three files can
// be replaced, before any training: a path that cannot be written fails
// every rank at once, not after the runs.
void prepare_output(Communicator& comm, const std::string& output) {
  std::string failure;
  if (comm.rank() == 0 && !output.empty()) {
    try {
      std::error_code error;
      fs::create_directories(output, error);
      if (error || !fs::is_directory(output)) {
        throw InvalidArgument("cannot create the output directory '" + output + "': " +
                              error.message());
      }
      for (const auto& file : qsdp_output_files(output)) check_can_replace(file, "--output");
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  if (const auto failed = engines::failures_of_ranks(comm, "qsdp output", failure);
      !failed.empty()) {
    throw InvalidArgument(failed + "; choose another --output");
  }
}

const QsdpRow* find_row(const std::vector<QsdpRow>& rows, const std::string& name) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const QsdpRow& r) { return r.variant.name == name; });
  return it == rows.end() ? nullptr : &*it;
}

}  // namespace

engines::TrainConfig qsdp_train_defaults() {
  engines::TrainConfig c;
  c.model = "gpt";
  c.engine = "sharded";
  c.hidden = 128;
  c.layers = 2;
  c.sequence_length = 64;
  c.batch = 16;
  c.optimizer = "adamw";
  c.beta1 = 0.9;
  c.beta2 = 0.95;
  c.lr = 0.003;
  c.seed = 1;
  return c;
}

std::uint64_t refit_of(const QsdpExperimentConfig& config) {
  return config.refit > 0 ? config.refit : default_qsdp_refit(config.steps);
}

std::vector<std::uint64_t> seeds_of(const QsdpExperimentConfig& config) {
  return config.seeds.empty() ? std::vector<std::uint64_t>{config.train.seed} : config.seeds;
}

void validate(const QsdpExperimentConfig& config) {
  if (config.steps == 0) throw InvalidArgument("--steps must be at least 1");
  const auto seeds = seeds_of(config);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (std::find(seeds.begin(), seeds.begin() + static_cast<std::ptrdiff_t>(i), seeds[i]) !=
        seeds.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw InvalidArgument("--seeds lists seed " + std::to_string(seeds[i]) + " twice; name each seed once");
    }
  }
  if (config.train.model != "gpt") {
    throw InvalidArgument("the qsdp experiment trains --model gpt, not '" + config.train.model +
                          "'");
  }
  // Names, codecs and every training setting, as each variant will run.
  for (const auto& variant : select_qsdp_variants(config.variants, refit_of(config))) {
    engines::validate(train_config_for(config, variant));
  }
}

double step_milliseconds(const engines::StepSplit& split) {
  return 1e3 * (split.data + split.compute + split.waiting + split.optimizer);
}

void compare_rows(std::vector<QsdpRow>& rows) {
  for (auto& row : rows) row.step_ms = step_milliseconds(row.summary.split);
  const QsdpRow* baseline = find_row(rows, "baseline");
  const QsdpRow* fp32 = find_row(rows, "fp32");
  const auto speedup = [](const QsdpRow* reference, const QsdpRow& row) {
    return reference == nullptr ? kNaN : reference->step_ms / row.step_ms;
  };
  // Per seed against the baseline's run of the same seed (the same data
  // order and initialisation): the paired difference.
  const auto relative = [&](const std::vector<double>& perplexities) {
    std::vector<double> out;
    for (std::size_t s = 0; s < perplexities.size(); ++s) {
      const bool paired = baseline != nullptr && s < baseline->perplexities.size();
      out.push_back(paired ? 100.0 * (perplexities[s] / baseline->perplexities[s] - 1.0) : kNaN);
    }
    return out;
  };
  for (auto& row : rows) {
    row.relative_percents = relative(row.perplexities);
    row.computed_relative_percents = relative(row.computed_perplexities);
    row.relative_perplexity_percent = mean_of(row.relative_percents);
    row.speedup_vs_fp32 = speedup(fp32, row);
    row.speedup_vs_baseline = speedup(baseline, row);
  }
}

QsdpReport run_qsdp_experiment(Communicator& comm, const QsdpExperimentConfig& config) {
  validate(config);
  check_settings_agree(comm, config);
  prepare_output(comm, config.output);
  const bool root = comm.rank() == 0;
  QsdpReport report;
  report.ranks = comm.size();
  report.steps = config.steps;
  report.refit = refit_of(config);
  report.seeds = seeds_of(config);
  report.cpu = cpu_description();
  for (const auto& variant : canonical_variants(config)) report.rows.push_back({.variant = variant});
  for (const std::uint64_t seed : report.seeds) {
    for (auto& row : report.rows) {
      report.train = train_config_for(config, row.variant);
      report.train.seed = seed;
      if (root && config.train.progress) {
        std::cerr << "== qsdp " << row.variant.name << ", seed " << seed << ": weights "
                  << row.variant.weights_codec << ", gradients " << row.variant.gradients_codec << "\n";
      }
      auto summary = engines::train(comm, report.train);
      row.perplexities.push_back(summary.final_metric);
      row.computed_perplexities.push_back(summary.final_computed_metric);
      if (seed == report.seeds.front()) row.summary = std::move(summary);
    }
  }
  report.train.seed = report.seeds.front();
  compare_rows(report.rows);
  if (root && !config.output.empty()) report.files = write_qsdp_outputs(report, config.output);
  return report;
}

}  // namespace qccl::tools
