// The training loop behind `qccl train`: data sharding, steps through the
// run's engine (data parallel or sharded, engine_choice.h), evaluation,
// logs, checkpoints and the summary.
//
// Sharding: each epoch visits the training set in one permutation of
// (seed, epoch), identical on every rank; step s of an epoch takes the
// n·B samples at [s·n·B, (s+1)·n·B) of it, rank r the B at offset r·B. So
// n ranks with batch B see exactly the samples of one process with batch
// n·B, and a resumed run knows its samples from (epoch, step) alone.
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "qccl/collectives/collective_call.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/progress_watch.h"
#include "qccl/common/files.h"
#include "qccl/common/page_faults.h"
#include "qccl/common/resident_memory.h"
#include "qccl/data/epoch_order.h"
#include "qccl/engines/blas_threads.h"
#include "qccl/engines/lr_schedule.h"
#include "qccl/engines/optimizers.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/engines/replica_check.h"
#include "qccl/engines/step_algorithm.h"
#include "qccl/models/tasks.h"
#include "qccl/training/checkpoint.h"
#include "qccl/training/checkpoint_identity.h"
#include "qccl/training/checkpoint_lock.h"
#include "qccl/training/checkpoint_manifest.h"
#include "qccl/training/engine_choice.h"
#include "qccl/training/merge_scheduler.h"
#include "qccl/training/optimizer_choice.h"
#include "qccl/training/train_config.h"
#include "qccl/training/train_output.h"
#include "qccl/transport/transport.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// checksum64 over the parameters' bytes, in order (replica_check.h).
std::uint64_t parameters_checksum(const std::vector<torch::Tensor>& parameters) {
  std::uint64_t h = kChecksumSeed;
  for (const auto& p : parameters) {
    const auto flat = p.detach().contiguous();
    const auto* data = static_cast<const std::byte*>(flat.data_ptr());
    h = checksum64(std::span(data, static_cast<std::size_t>(flat.nbytes())), h);
  }
  return h;
}

// The largest of the ranks' `peak`s, in bytes (a collective: every rank
// gets it).
std::uint64_t largest_peak_rss(Communicator& comm, std::uint64_t peak) {
  std::vector<double> peaks(static_cast<std::size_t>(comm.size()), 0.0);
  peaks[static_cast<std::size_t>(comm.rank())] = static_cast<double>(peak);
  sum_over_ranks(comm, peaks, "peak memory");
  return static_cast<std::uint64_t>(*std::max_element(peaks.begin(), peaks.end()));
}

std::string optimizer_text(const TrainConfig& c) {
  std::ostringstream text;
  text << c.optimizer << " lr=" << c.lr << " " << c.lr_schedule << " warmup=" << c.warmup_steps
       << " wd=" << c.weight_decay;
  if (c.optimizer == "sgd") text << " momentum=" << c.momentum;
  else text << " betas=" << c.beta1 << "," << c.beta2 << " eps=" << c.eps;
  text << embedding_optimizer_text(c);
  return text.str();
}

// Settings every rank must share, compared before any step: a rank started
// with another model, codec, optimizer, batch or checkpoint fails on every
// rank with a MismatchError naming the field and the ranks.
void check_settings_agree(Communicator& comm, const TrainConfig& c, std::int64_t resume_step) {
  Fingerprint fingerprint("train settings");
  fingerprint.add_text("model and data", c.model + " on " + c.data + gpt_outliers_text(c) +
                                             (c.sparse_embeddings ? "" : ", --dense-embeddings"))
      .add_text("codec", exchange_settings(c))
      .add_text("optimizer", optimizer_text(c))
      .add_text("schedule", "batch " + std::to_string(c.batch) + " per rank, " +
                                std::to_string(c.epochs) + " epochs, at most " +
                                std::to_string(c.max_steps_per_epoch) + " steps each (0: all); "
                                "buckets " + bucket_settings(c) + (c.plan_only ? ", planning only" : ""))
      .add_text("seed and resume", "--seed " + std::to_string(c.seed) + ", resumed at step " +
                                       std::to_string(resume_step) + " (-1: a fresh run)")
      // These decide collective calls (a checkpoint's barrier, the step a
      // run stops at, a skipped step, a replica check): a rank without them
      // would hang the others at that call.
      .add_text("run control",
                "--stop-after " + std::to_string(c.stop_after_steps) + ", --checkpoint-every " +
                    std::to_string(c.checkpoint_every) + ", --checkpoint-dir " +
                    (c.checkpoint_dir.empty() ? "unset" : "set") + ", --skip-nonfinite " +
                    (c.skip_nonfinite ? "on" : "off") + " (at most " +
                    std::to_string(c.max_skipped_consecutive) + " in a row, " +
                    std::to_string(c.max_skipped_total) + " in all), --verify-every " +
                    std::to_string(c.verify_every) + ", --no-overlap-updates " +
                    (c.overlap_updates ? "off" : "on"));
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

EvalSums evaluate(Communicator& comm, Task& task, double train_loss_sum, double train_steps,
                  double* train_loss) {
  std::vector<std::uint32_t> samples;
  EvalSums sums;
  const std::size_t n = static_cast<std::size_t>(comm.size());
  constexpr std::size_t kBatch = 500;
  for (std::size_t i = static_cast<std::size_t>(comm.rank()); i < task.test_size(); i += n) {
    samples.push_back(static_cast<std::uint32_t>(i));
    if (samples.size() == kBatch || i + n >= task.test_size()) {
      const ProgressWatch::Scope busy(comm.options().progress, comm.rank(), "evaluating the test set");
      const auto part = task.evaluate(task.batch(samples, true));
      sums.loss += part.loss;
      sums.correct += part.correct;
      sums.predictions += part.predictions;
      samples.clear();
    }
  }
  std::vector<double> totals{sums.loss, sums.correct, sums.predictions, train_loss_sum, train_steps};
  sum_over_ranks(comm, totals, "test metrics");
  *train_loss = totals[4] > 0 ? totals[3] / totals[4] : 0;
  return {totals[0], totals[1], totals[2]};
}

// The median of each part over the steps: robust to the first steps'
// allocations and to the noise of a shared machine.
StepSplit median_split(const std::vector<StepSplit>& steps) {
  const auto median = [&](double StepSplit::*field) {
    std::vector<double> values;
    for (const auto& s : steps) values.push_back(s.*field);
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                     values.end());
    return values[values.size() / 2];
  };
  StepSplit m;
  for (double StepSplit::*field :
       {&StepSplit::data, &StepSplit::compute, &StepSplit::waiting, &StepSplit::optimizer,
        &StepSplit::encode, &StepSplit::communicate, &StepSplit::decode, &StepSplit::faults,
        &StepSplit::optimizer_faults, &StepSplit::communication_faults}) {
    m.*field = median(field);
  }
  return m;
}

SteadyFaults steady_faults(const std::vector<StepSplit>& steps) {
  SteadyFaults steady;
  for (std::size_t i = steps.size() / 2; i < steps.size(); ++i) {
    const double faults = steps[i].faults + steps[i].communication_faults;
    steady.mean += faults;
    steady.max = std::max(steady.max, faults);
    ++steady.steps;
  }
  if (steady.steps > 0) steady.mean /= static_cast<double>(steady.steps);
  return steady;
}

// One invocation of train(): the task, optimizer and engine it sets up, the
// position in the schedule, and what it measures along the way.
class TrainingRun {
 public:
  TrainingRun(Communicator& comm, const TrainConfig& config);
  void run();
  TrainSummary result();

 private:
  void step(std::int64_t epoch, std::int64_t s, std::span<const std::uint32_t> order);
  void end_epoch(std::int64_t epoch, Clock::time_point epoch_start);
  // The test metric of the weights the oracles compute with, where the
  // engine has them (QSDP's Q^w(W)), into the summary.
  void evaluate_computed_weights();
  void log_step(std::int64_t epoch, double loss, double lr, double seconds,
                const StepSplit& split, std::uint64_t sent, bool skipped,
                const OracleResult& timeline);
  void skip(const NonFiniteError& error);
  // The layout's counts in the summary (at the start and after a re-plan).
  void describe_layout();
  // Every 2-D parameter's spread, of the whole model (on every rank).
  std::vector<WeightRange> weight_ranges();
  // MergeComp: measure, search, re-plan, and log the choice.
  void plan_buckets();
  // The model's parameters and the weights the last oracle computed with
  // (the sharded engine's gathered ones) agree on every rank.
  void verify(std::string_view when) {
    const WholeModel whole(*engine_);
    verify_replicas(comm_,
                    parameters_checksum(task_->model().parameters()) ^ engine_->computed_checksum(),
                    at_.global_step, when);
  }
  void save() {
    const ProgressWatch::Scope busy(comm_.options().progress, comm_.rank(), "saving a checkpoint",
                                    at_.global_step);
    verify("at a checkpoint");
    const WholeModel whole(*engine_);
    save_checkpoint(comm_, config_.checkpoint_dir, task_->metric_name(), task_->model(),
                    *optimizer_, *engine_, at_, config_);
  }

  Communicator& comm_;
  const TrainConfig& config_;
  const bool root_;
  std::unique_ptr<Task> task_;
  std::int64_t resume_step_ = -1;
  std::unique_ptr<Engine> engine_;
  std::optional<MergeCompScheduler> scheduler_;  // buckets = mergecomp, until planned
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<StepAlgorithm> algorithm_ = make_step_algorithm("gradient");
  Position at_;
  std::unique_ptr<MetricLog> log_;
  Progress progress_;
  std::size_t global_batch_ = 0, steps_per_epoch_ = 0;
  LrSchedule schedule_;
  TrainSummary summary_;
  Clock::time_point start_;
  std::vector<StepSplit> splits_;
  double training_seconds_ = 0, sent_bytes_ = 0;
  // The process's peak resident memory over the training steps, evaluation
  // excluded: reset when each epoch's steps begin, read after each step.
  std::uint64_t steps_peak_rss_ = 0;
};

TrainingRun::TrainingRun(Communicator& comm, const TrainConfig& config)
    : comm_(comm),
      config_(config),
      root_(comm.rank() == 0),
      task_(make_task(config)),
      progress_(root_ && config.progress) {
  task_->initialize(config.seed);
  Manifest manifest;
  if (config.resume) {
    manifest = read_manifest(config.checkpoint_dir);
    resume_step_ = manifest.step;
  }
  if (!config.resume && !config.force && !config.checkpoint_dir.empty()) {
    check_fresh_start(config.checkpoint_dir);
  }
  check_settings_agree(comm, config, resume_step_);
  if (config.resume) {
    check_resume_settings(manifest, resume_settings(config, comm.size()), config.checkpoint_dir);
  }

  engine_ = make_engine(comm_, config, *task_);
  optimizer_ = make_optimizer(config, engine_->optimizer_parameters(),
                              sparse_embedding_tables(task_->model()));
  engine_->broadcast_from_root();
  if (config.resume) {
    {
      const WholeModel whole(*engine_);
      at_ = load_checkpoint(comm, config.checkpoint_dir, manifest, task_->model(), *optimizer_,
                            *engine_);
    }
    engine_->set_steps_begun(static_cast<std::uint64_t>(at_.global_step));
    verify("after resuming");
  }
  if (!config.checkpoint_dir.empty() && at_.run == 0) at_.run = new_run_identity(comm);
  // A checkpoint written after planning holds the plan (the engine took it
  // when loading); one written before it goes on profiling.
  if (config.buckets == "mergecomp" && engine_->bucketed_exchange() != nullptr &&
      engine_->bucketed_exchange()->plan().bucket_count() == 1) {
    scheduler_.emplace(config);
  }
  log_ = std::make_unique<MetricLog>(root_ ? config.log_path : std::string(), config.resume,
                                     config.force);

  const std::size_t n = static_cast<std::size_t>(comm.size());
  global_batch_ = n * config.batch;
  steps_per_epoch_ = task_->train_size() / global_batch_;
  if (config.max_steps_per_epoch > 0) {
    steps_per_epoch_ = std::min(steps_per_epoch_, config.max_steps_per_epoch);
  }
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument("train: " + std::to_string(task_->train_size()) + " training samples " +
                          "make no full step of " + std::to_string(n) + " ranks × batch " +
                          std::to_string(config.batch) + "; lower --batch");
  }

  schedule_ = LrSchedule{config.lr_schedule, config.lr, config.warmup_steps,
                         steps_per_epoch_ * static_cast<std::size_t>(config.epochs)};
  validate(schedule_);

  summary_.model = config.model;
  summary_.data = config.data;
  summary_.codec = engine_->codec_spec();
  summary_.engine = config.engine;
  summary_.weights_codec = engine_->weights_codec_spec();
  summary_.ranks = comm.size();
  summary_.metric_name = task_->metric_name();
  summary_.parameters = engine_->elements();
  describe_layout();
  log_->write({{"event", "start"}, {"model", config.model}, {"data", config.data},
               {"codec", summary_.codec}, {"ranks", comm.size()}, {"batch_per_rank", config.batch},
               {"optimizer", optimizer_text(config)}, {"parameters", summary_.parameters},
               {"buckets", summary_.buckets}, {"bucket_policy", summary_.bucket_policy},
               {"payload_bytes_per_step", summary_.payload_bytes_per_step},
               {"steps_per_epoch", steps_per_epoch_}, {"resumed_at_step", resume_step_}});
}

void TrainingRun::run() {
  start_ = Clock::now();
  for (std::int64_t epoch = at_.epoch; epoch < config_.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    const auto order = data::epoch_permutation(task_->train_size(), config_.seed,
                                               static_cast<std::uint64_t>(epoch));
    reset_peak_resident();
    for (auto s = at_.step_in_epoch; s < static_cast<std::int64_t>(steps_per_epoch_); ++s) {
      if (config_.stop_after_steps > 0 && summary_.steps >= config_.stop_after_steps) {
        if (!config_.checkpoint_dir.empty()) save();
        return;
      }
      step(epoch, s, order);
      if (config_.plan_only && summary_.plan) return;
    }
    end_epoch(epoch, epoch_start);
  }
  if (!config_.checkpoint_dir.empty()) save();
  else verify("at the end of the run");
}

// One step: this rank's batch, forward and backward (the engine reduces
// buckets meanwhile), the wait for the last buckets, the optimizer step.
void TrainingRun::step(std::int64_t epoch, std::int64_t s, std::span<const std::uint32_t> order) {
  StepSplit split;
  const auto step_start = Clock::now();
  const auto faults_before = thread_minor_faults();
  const std::size_t first = static_cast<std::size_t>(s) * global_batch_ +
                            static_cast<std::size_t>(comm_.rank()) * config_.batch;
  ProgressWatch* const progress = comm_.options().progress;
  const auto batch = [&] {
    const ProgressWatch::Scope busy(progress, comm_.rank(), "reading its batch", at_.global_step);
    return task_->batch(order.subspan(first, config_.batch), false);
  }();
  split.data = seconds_since(step_start);

  const auto sent_before = engine_->bytes_sent();
  const auto k = static_cast<std::size_t>(at_.global_step);
  StepContext context{*engine_, *optimizer_, [&] { return task_->loss(batch); },
                      learning_rate(schedule_, k), learning_rate(schedule_, k + 1),
                      config_.overlap_updates};
  StepOutcome outcome;
  bool skipped = false;
  try {
    // Waits on peers inside have their own timeouts; the watch ends a step
    // whose computation never finishes (an allocator retrying forever).
    const ProgressWatch::Scope busy(progress, comm_.rank(), "forward, backward and the exchange",
                                    at_.global_step);
    algorithm_->step(context, outcome);
  } catch (const NonFiniteError& e) {
    if (!config_.skip_nonfinite) {
      throw NonFiniteError(std::string(e.what()) + " (local loss " +
                           std::to_string(outcome.oracle.loss) +
                           "; pass --skip-nonfinite to skip such steps)");
    }
    skip(e);
    skipped = true;
  }
  if (!skipped) at_.skipped_in_a_row = 0;
  const double loss_value = outcome.oracle.loss;
  const double lr = context.lr;
  split.compute = outcome.oracle.compute;
  split.waiting = outcome.oracle.waiting;
  split.encode = outcome.oracle.encode;
  split.communicate = outcome.oracle.communicate;
  split.decode = outcome.oracle.decode;
  split.optimizer = outcome.optimizer;
  split.optimizer_faults = static_cast<double>(outcome.optimizer_faults);
  split.communication_faults = static_cast<double>(outcome.oracle.communication_faults);
  if (scheduler_ && !skipped) {
    scheduler_->observe(*engine_->bucketed_exchange(), split.data, split.optimizer);
    if (scheduler_->ready_to_plan()) plan_buckets();
  }
  const auto sent = engine_->bytes_sent() - sent_before;
  steps_peak_rss_ = std::max(steps_peak_rss_, peak_resident_bytes());
  sent_bytes_ += static_cast<double>(sent);
  if (!skipped && std::isfinite(loss_value)) {
    at_.epoch_loss_sum += loss_value;
    at_.epoch_loss_steps += 1;
  }
  ++at_.global_step;
  at_.step_in_epoch = s + 1;
  ++summary_.steps;
  const double seconds = seconds_since(step_start);
  split.faults = static_cast<double>(thread_minor_faults() - faults_before);
  splits_.push_back(split);
  training_seconds_ += seconds;
  if (root_) {
    log_step(epoch, loss_value, lr, seconds, split, sent, skipped, outcome.oracle);
    progress_.update(static_cast<int>(epoch), config_.epochs, s,
                     static_cast<std::int64_t>(steps_per_epoch_),
                     at_.epoch_loss_steps > 0 ? at_.epoch_loss_sum / at_.epoch_loss_steps : loss_value,
                     static_cast<double>(global_batch_) * static_cast<double>(summary_.steps) /
                         seconds_since(start_));
  }
  const auto every = [&](std::size_t k) {
    return k > 0 && at_.global_step % static_cast<std::int64_t>(k) == 0;
  };
  if (every(config_.checkpoint_every)) save();
  else if (every(config_.verify_every)) verify("checked every " + std::to_string(config_.verify_every) + " steps");
}

void TrainingRun::describe_layout() {
  summary_.buckets = engine_->bucket_count();
  summary_.bucket_policy = engine_->layout_name();
  summary_.payload_bytes_per_step = engine_->payload_bytes();
  summary_.compression_ratio =
      4.0 * static_cast<double>(engine_->elements()) / engine_->payload_bytes();
}

void TrainingRun::plan_buckets() {
  summary_.plan = scheduler_->plan(comm_, *engine_->bucketed_exchange());
  scheduler_.reset();
  describe_layout();
  Json line = plan_json(*summary_.plan);
  line["event"] = "plan";
  line["after_step"] = at_.global_step;
  line["bucket_policy"] = summary_.bucket_policy;
  log_->write(line);
  if (root_ && config_.progress && !config_.plan_only) {
    progress_.end_line();
    std::cerr << "mergecomp: " << summary_.bucket_policy << ", predicted "
              << std::setprecision(4) << summary_.plan->predictions.front().seconds * 1e3
              << " ms/step\n";
  }
}

// Counts a step whose gradients held NaN or Inf (every rank sees the same
// ones) as skipped, unless that makes too many in a row or in all: then the
// run has diverged, and skipping on would only hide it.
void TrainingRun::skip(const NonFiniteError& error) {
  ++at_.skipped;
  ++at_.skipped_in_a_row;
  const auto limit = [&](std::int64_t count, std::size_t most, const char* option,
                         const char* what) {
    if (count <= static_cast<std::int64_t>(most)) return;
    throw NonFiniteError(std::string(error.what()) + "; that makes " + std::to_string(count) +
                         " steps with NaN or Inf " + what + ", more than " + option + " " +
                         std::to_string(most) + ": the run has diverged. Lower --lr, resume from "
                         "an earlier checkpoint, or raise " + option);
  };
  limit(at_.skipped_in_a_row, config_.max_skipped_consecutive, "--max-skipped-consecutive",
        "in a row");
  limit(at_.skipped, config_.max_skipped_total, "--max-skipped-total", "in this run");
  log_->write({{"event", "skipped"}, {"step", at_.global_step}, {"reason", error.what()}});
}

void TrainingRun::log_step(std::int64_t epoch, double loss, double lr, double seconds,
                           const StepSplit& split, std::uint64_t sent, bool skipped,
                           const OracleResult& timeline) {
  Json line{{"event", "step"},          {"step", at_.global_step - 1},
            {"epoch", epoch},           {"loss", loss},
            {"lr", lr},                 {"seconds", seconds},
            {"data", split.data},       {"compute", split.compute},
            {"waiting", split.waiting}, {"optimizer", split.optimizer},
            {"encode", split.encode},   {"communicate", split.communicate},
            {"decode", split.decode},   {"page_faults", split.faults},
            {"optimizer_page_faults", split.optimizer_faults},
            {"communication_page_faults", split.communication_faults},
            {"payload_bytes", summary_.payload_bytes_per_step},
            {"sent_bytes", sent},       {"skipped", skipped}};
  if (timeline.sparse_rows > 0) line["sparse_rows"] = timeline.sparse_rows;
  const ExchangeCounters* counters = engine_->exchange_counters();
  if (const auto stats = counters ? counters->exchange_stats() : CodecStepStats{}; stats.integer) {
    line["largest_integer_sent"] = stats.largest_sent;  // IntSGD's counters
    line["clipped"] = stats.clipped;
  }
  // [start, end] pairs, seconds since the forward pass began (engine.h).
  const auto pairs = [](const std::vector<OracleInterval>& intervals) {
    Json list = Json::array();
    for (const auto& i : intervals) list.push_back({i.start, i.end});
    return list;
  };
  if (!timeline.exchanges.empty()) line["exchanges"] = pairs(timeline.exchanges);
  if (!timeline.updates.empty()) line["updates"] = pairs(timeline.updates);
  log_->write(line);
}

// (max − min)/σ_bulk of every 2-D parameter (WeightRange), in double; the
// sharded engine gathers its shards for it, so every rank takes part.
std::vector<WeightRange> TrainingRun::weight_ranges() {
  const WholeModel whole(*engine_);
  torch::NoGradGuard no_grad;
  std::vector<WeightRange> ranges;
  for (const auto& item : task_->model().named_parameters()) {
    const torch::Tensor& p = item.value();
    if (p.dim() != 2 || p.numel() < 2) continue;
    const auto values = p.detach().to(torch::kFloat64).flatten();
    const auto deviations = (values - values.median()).abs();
    const double bulk_sd = 1.4826 * deviations.median().item<double>();
    const double range = (values.max() - values.min()).item<double>();
    ranges.push_back({item.key(), static_cast<std::size_t>(p.numel()),
                      bulk_sd > 0 ? range / bulk_sd : 0.0});
  }
  return ranges;
}

void TrainingRun::end_epoch(std::int64_t epoch, Clock::time_point epoch_start) {
  progress_.end_line();
  double train_loss = 0;
  EvalSums sums;
  {
    const WholeModel whole(*engine_);
    sums = evaluate(comm_, *task_, at_.epoch_loss_sum, at_.epoch_loss_steps, &train_loss);
  }
  if (config_.evaluate_computed_weights && epoch + 1 == config_.epochs) evaluate_computed_weights();
  const EpochResult result{static_cast<int>(epoch), train_loss,
                           sums.loss / std::max(sums.predictions, 1.0), task_->metric(sums),
                           seconds_since(epoch_start)};
  summary_.epochs.push_back(result);
  log_->write({{"event", "epoch"}, {"epoch", epoch}, {"train_loss", result.train_loss},
               {"test_loss", result.test_loss}, {task_->metric_name(), result.test_metric},
               {"seconds", result.seconds}});
  if (root_ && config_.progress) {
    std::ostringstream line;
    line << "epoch " << epoch + 1 << "/" << config_.epochs << ": train loss "
         << std::setprecision(4) << result.train_loss << ", test loss " << result.test_loss
         << ", test " << task_->metric_name() << " " << result.test_metric << " (" << std::fixed
         << std::setprecision(1) << result.seconds << " s)\n";
    std::cerr << line.str();
  }
  at_.epoch = epoch + 1;
  at_.step_in_epoch = 0;
  at_.epoch_loss_sum = at_.epoch_loss_steps = 0;
}

void TrainingRun::evaluate_computed_weights() {
  if (!engine_->gather_computed_model()) return;
  double unused = 0;
  EvalSums sums;
  try {
    sums = evaluate(comm_, *task_, 0, 0, &unused);
  } catch (...) {
    engine_->release_model();
    throw;
  }
  engine_->release_model();
  summary_.final_computed_metric = task_->metric(sums);
}

TrainSummary TrainingRun::result() {
  TrainSummary& summary = summary_;
  summary.wall_seconds = seconds_since(start_);
  summary.skipped_steps = static_cast<std::size_t>(at_.skipped);
  if (!summary.epochs.empty()) {
    summary.final_metric = summary.epochs.back().test_metric;
    summary.final_test_loss = summary.epochs.back().test_loss;
  }
  if (summary.steps > 0) {
    summary.split = median_split(splits_);
    summary.steady_faults = steady_faults(splits_);
    if (config_.algorithm != Algorithm::native) {
      summary.sent_bytes_per_step = sent_bytes_ / static_cast<double>(summary.steps);
    }
    summary.steps_per_second = static_cast<double>(summary.steps) / training_seconds_;
    summary.samples_per_second = summary.steps_per_second * static_cast<double>(global_batch_);
  }
  if (config_.report_weight_ranges) summary.weight_ranges = weight_ranges();
  if (config_.return_parameters) {
    const WholeModel whole(*engine_);
    for (const auto& p : task_->model().parameters()) {
      const auto flat = p.detach().contiguous().view(-1);
      summary.final_parameters.insert(summary.final_parameters.end(), flat.data_ptr<float>(),
                                      flat.data_ptr<float>() + flat.numel());
    }
  }
  summary.peak_rss_bytes = largest_peak_rss(comm_, steps_peak_rss_);
  auto line = summary_json(summary);
  line["event"] = "summary";
  log_->write(line);
  log_->sync();
  return summary;
}

}  // namespace

TrainSummary train(Communicator& comm, const TrainConfig& given) {
  TrainConfig config = given;
  if (config.data.empty()) config.data = dataset_for_model(config.model);
  torch::set_num_threads(config.threads);
  set_blas_threads(config.threads);
  check_outputs(comm, outputs_of(config));
  const CheckpointLock lock(comm, config.checkpoint_dir);
  TrainingRun run = [&] {
    const ProgressWatch::Scope busy(comm.options().progress, comm.rank(),
                                    "loading the data and building the model");
    return TrainingRun(comm, config);
  }();
  run.run();
  return run.result();
}

}  // namespace qccl::engines
