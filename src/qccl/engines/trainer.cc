// The training loop behind `qccl train`: data sharding, steps through the
// data-parallel engine, evaluation, logs, checkpoints and the summary.
//
// Sharding: each epoch visits the training set in one permutation of
// (seed, epoch), identical on every rank; step s of an epoch takes the
// n·B samples at [s·n·B, (s+1)·n·B) of it, rank r the B at offset r·B. So
// n ranks with batch B see exactly the samples of one process with batch
// n·B, and a resumed run knows its samples from (epoch, step) alone.
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "qccl/codecs/codec_spec.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/data/epoch_order.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/engines/tasks.h"
#include "qccl/engines/train_config.h"
#include "qccl/transport/transport.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sums `values` over ranks in fp64, as one checked call (also a barrier).
void sum_over_ranks(Communicator& comm, std::span<double> values, std::string_view what) {
  Fingerprint fingerprint("train sum");
  fingerprint.add_text("what", what).add("count", static_cast<std::int64_t>(values.size()));
  const Timeout timeout = comm.timeout(std::nullopt);
  comm.run(fingerprint, timeout, [&](int) {
    if (comm.size() > 1) allreduce_values<double>(comm.transport(), values, ReduceOp::sum, timeout);
  });
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c,
                                                        std::vector<torch::Tensor> params) {
  namespace optim = torch::optim;
  if (c.optimizer == "adam") {
    return std::make_unique<optim::Adam>(
        params, optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  if (c.optimizer == "adamw") {
    return std::make_unique<optim::AdamW>(
        params, optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  return std::make_unique<optim::SGD>(
      params, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
}

std::string optimizer_text(const TrainConfig& c) {
  std::ostringstream text;
  text << c.optimizer << " lr=" << c.lr << " wd=" << c.weight_decay;
  if (c.optimizer == "sgd") text << " momentum=" << c.momentum;
  else text << " betas=" << c.beta1 << "," << c.beta2 << " eps=" << c.eps;
  return text.str();
}

// Settings every rank must share, compared before any step: a rank started
// with another model, codec, optimizer, batch or checkpoint fails on every
// rank with a MismatchError naming the field and the ranks.
void check_settings_agree(Communicator& comm, const TrainConfig& c, std::int64_t resume_step) {
  Fingerprint fingerprint("train settings");
  fingerprint.add_text("model and data", c.model + " on " + c.data)
      .add_text("codec", make_codec(c.codec)->spec())
      .add_text("optimizer", optimizer_text(c))
      .add_text("schedule", "batch " + std::to_string(c.batch) + " per rank, " +
                                std::to_string(c.epochs) + " epochs, at most " +
                                std::to_string(c.max_steps_per_epoch) + " steps each (0: all)")
      .add("seed", static_cast<std::int64_t>(c.seed))
      .add("resumed step", resume_step);
  comm.run(fingerprint, comm.timeout(std::nullopt), [](int) {});
}

// ---- checkpoints -------------------------------------------------------------

// Where training stands: enough to continue exactly.
struct Position {
  std::int64_t global_step = 0, epoch = 0, step_in_epoch = 0, skipped = 0;
  double epoch_loss_sum = 0, epoch_loss_steps = 0;
};

std::string checkpoint_file(const std::string& dir, std::int64_t step, int rank) {
  return dir + "/step-" + std::to_string(step) + "/rank-" + std::to_string(rank) + ".pt";
}

// Checkpoint layout: DIR/step-S/rank-R.pt per rank (each rank's codec state
// differs: IntDIANA's shifts, the per-rank random streams), and DIR/latest.json
// written by rank 0 only after every rank's file is complete — so a crash
// while writing leaves the previous checkpoint in force. Older step folders
// are removed after the new manifest is in place.
void save_checkpoint(Communicator& comm, const std::string& dir, const Task& task,
                     torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     DataParallelEngine& engine, const Position& at, const TrainConfig& c) {
  const std::string file = checkpoint_file(dir, at.global_step, comm.rank());
  fs::create_directories(fs::path(file).parent_path());
  torch::serialize::OutputArchive archive;
  for (const auto& item : model.named_parameters()) archive.write("model." + item.key(), item.value());
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  for (std::size_t b = 0; b < engine.bucket_count(); ++b) {
    auto state = engine.codec(b).save_state();
    auto bytes = torch::empty({static_cast<std::int64_t>(state.size())}, torch::kUInt8);
    if (!state.empty()) std::memcpy(bytes.data_ptr<std::uint8_t>(), state.data(), state.size());
    archive.write("codec." + std::to_string(b) + ".state", bytes);
    archive.write("codec." + std::to_string(b) + ".step",
                  torch::tensor({static_cast<std::int64_t>(engine.codec(b).step())}));
  }
  archive.write("position", torch::tensor({at.global_step, at.epoch, at.step_in_epoch, at.skipped,
                                           static_cast<std::int64_t>(comm.size())}));
  archive.write("epoch_loss", torch::tensor({at.epoch_loss_sum, at.epoch_loss_steps},
                                            torch::kFloat64));
  const std::string partial = file + ".partial";
  archive.save_to(partial);
  fs::rename(partial, file);
  std::vector<double> barrier{0.0};
  sum_over_ranks(comm, barrier, "checkpoint written");
  if (comm.rank() == 0) {
    const Json manifest{{"step", at.global_step},   {"epoch", at.epoch},
                        {"ranks", comm.size()},      {"model", c.model},
                        {"data", c.data},            {"codec", make_codec(c.codec)->spec()},
                        {"metric", task.metric_name()}};
    write_file_atomically(dir + "/latest.json", manifest.dump(2) + "\n");
  }
  sum_over_ranks(comm, barrier, "checkpoint manifest written");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || name == "step-" + std::to_string(at.global_step)) continue;
    std::error_code ignored;
    fs::remove(entry.path() / ("rank-" + std::to_string(comm.rank()) + ".pt"), ignored);
    fs::remove(entry.path(), ignored);  // succeeds once the last rank's file is gone
  }
}

std::int64_t latest_checkpoint_step(const std::string& dir, int ranks) {
  const std::string path = dir + "/latest.json";
  std::ifstream in(path);
  if (!in) {
    throw InvalidArgument("--resume: no checkpoint in '" + dir + "' (" + path +
                          " is missing); run without --resume to start fresh");
  }
  Json manifest;
  try {
    manifest = Json::parse(in);
  } catch (const Json::exception& e) {
    throw InvalidArgument("--resume: '" + path + "' is corrupt (" + e.what() + ")");
  }
  if (!manifest.contains("step") || !manifest.contains("ranks")) {
    throw InvalidArgument("--resume: '" + path + "' lacks step or ranks");
  }
  if (manifest["ranks"].get<int>() != ranks) {
    throw InvalidArgument("--resume: the checkpoint in '" + dir + "' was written by " +
                          std::to_string(manifest["ranks"].get<int>()) + " ranks; resume with " +
                          "that many (this run has " + std::to_string(ranks) + ")");
  }
  return manifest["step"].get<std::int64_t>();
}

Position load_checkpoint(Communicator& comm, const std::string& dir, std::int64_t step,
                         torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                         DataParallelEngine& engine) {
  const std::string file = checkpoint_file(dir, step, comm.rank());
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(file);
    torch::NoGradGuard no_grad;
    for (auto& item : model.named_parameters()) {
      torch::Tensor saved;
      archive.read("model." + item.key(), saved);
      if (!saved.sizes().equals(item.value().sizes())) {
        throw InvalidArgument("parameter '" + item.key() + "' has another shape");
      }
      item.value().copy_(saved);
    }
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    for (std::size_t b = 0; b < engine.bucket_count(); ++b) {
      torch::Tensor state, codec_step;
      archive.read("codec." + std::to_string(b) + ".state", state);
      archive.read("codec." + std::to_string(b) + ".step", codec_step);
      const auto* bytes = reinterpret_cast<const std::byte*>(state.data_ptr<std::uint8_t>());
      engine.codec(b).load_state(std::span(bytes, static_cast<std::size_t>(state.numel())));
      engine.codec(b).set_step(static_cast<std::uint64_t>(codec_step.item<std::int64_t>()));
    }
    torch::Tensor position, epoch_loss;
    archive.read("position", position);
    archive.read("epoch_loss", epoch_loss);
    Position at;
    at.global_step = position[0].item<std::int64_t>();
    at.epoch = position[1].item<std::int64_t>();
    at.step_in_epoch = position[2].item<std::int64_t>();
    at.skipped = position[3].item<std::int64_t>();
    at.epoch_loss_sum = epoch_loss[0].item<double>();
    at.epoch_loss_steps = epoch_loss[1].item<double>();
    if (at.global_step != step) throw InvalidArgument("it holds step " + std::to_string(at.global_step));
    return at;
  } catch (const c10::Error& e) {
    throw InvalidArgument("--resume: cannot read '" + file + "' (missing, corrupt, or from " +
                          "another model or codec): " + e.what_without_backtrace());
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("--resume: '" + file + "' does not fit this run: " + e.what());
  }
}

// ---- progress and log -----------------------------------------------------------

// Rank 0's progress line on stderr: redrawn in place on a terminal, a line
// every tenth of an epoch otherwise (logs stay readable).
class Progress {
 public:
  Progress(bool enabled) : enabled_(enabled), terminal_(enabled && isatty(STDERR_FILENO) == 1) {}
  void update(int epoch, int epochs, std::int64_t step, std::int64_t steps, double loss,
              double samples_per_second) {
    if (!enabled_) return;
    const bool milestone = steps < 10 || (step + 1) % (steps / 10) == 0 || step + 1 == steps;
    if (!terminal_ && !milestone) return;
    const int width = 30;
    const int filled = static_cast<int>(width * (step + 1) / std::max<std::int64_t>(steps, 1));
    std::ostringstream line;
    line << "epoch " << epoch + 1 << "/" << epochs << " [" << std::string(filled, '=')
         << std::string(width - filled, ' ') << "] " << step + 1 << "/" << steps << "  loss "
         << std::fixed << std::setprecision(4) << loss << "  " << std::setprecision(0)
         << samples_per_second << " samples/s";
    std::cerr << (terminal_ ? "\r" : "") << line.str() << (terminal_ ? "" : "\n") << std::flush;
  }
  void end_line() {
    if (terminal_) std::cerr << "\n";
  }

 private:
  bool enabled_, terminal_;
};

// JSON lines, flushed line by line so a crash loses at most the line being
// written. Opened for appending when resuming.
class MetricLog {
 public:
  MetricLog(const std::string& path, bool resume, bool force) {
    if (path.empty()) return;
    if (!resume && !force && fs::exists(path)) {
      throw InvalidArgument("log '" + path + "' exists; pass --resume to append to it, --force "
                            "to replace it, or choose another --log");
    }
    out_.open(path, resume ? std::ios::app : std::ios::trunc);
    if (!out_) throw InvalidArgument("cannot write the log '" + path + "'");
  }
  void write(const Json& line) {
    if (out_.is_open()) out_ << line.dump() << "\n" << std::flush;
  }

 private:
  std::ofstream out_;
};

EvalSums evaluate(Communicator& comm, Task& task, double train_loss_sum, double train_steps,
                  double* train_loss) {
  std::vector<std::uint32_t> samples;
  EvalSums sums;
  const std::size_t n = static_cast<std::size_t>(comm.size());
  constexpr std::size_t kBatch = 500;
  for (std::size_t i = static_cast<std::size_t>(comm.rank()); i < task.test_size(); i += n) {
    samples.push_back(static_cast<std::uint32_t>(i));
    if (samples.size() == kBatch || i + n >= task.test_size()) {
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
  for (double StepSplit::*field : {&StepSplit::data, &StepSplit::compute, &StepSplit::waiting,
                                   &StepSplit::optimizer, &StepSplit::encode,
                                   &StepSplit::communicate, &StepSplit::decode}) {
    m.*field = median(field);
  }
  return m;
}

bool finite_loss(const torch::Tensor& loss) { return std::isfinite(loss.item<double>()); }

}  // namespace

TrainSummary train(Communicator& comm, const TrainConfig& given) {
  TrainConfig config = given;
  if (config.data.empty()) config.data = dataset_for_model(config.model);
  torch::set_num_threads(config.threads);
  const bool root = comm.rank() == 0;
  auto task = make_task(config);
  task->initialize(config.seed);
  auto& model = task->model();

  std::vector<NamedTensor> named;
  std::vector<torch::Tensor> params;
  for (const auto& item : model.named_parameters()) {
    named.emplace_back(item.key(), item.value());
    params.push_back(item.value());
  }
  EngineOptions engine_options;
  engine_options.codec = config.codec;
  engine_options.seed = config.seed;
  engine_options.collective.algorithm = config.algorithm;
  engine_options.policy =
      std::make_shared<SizeCappedPolicy>(config.bucket_cap_bytes, config.first_bucket_bytes);
  engine_options.timeout = comm.options().timeout;
  auto optimizer = make_optimizer(config, params);

  const std::int64_t resume_step =
      config.resume ? latest_checkpoint_step(config.checkpoint_dir, comm.size()) : -1;
  if (!config.resume && !config.force && !config.checkpoint_dir.empty() &&
      fs::exists(config.checkpoint_dir + "/latest.json")) {
    throw InvalidArgument("'" + config.checkpoint_dir + "' holds a checkpoint; pass --resume to "
                          "continue it, --force to overwrite it, or choose another directory");
  }
  check_settings_agree(comm, config, resume_step);
  DataParallelEngine engine(comm, named, engine_options);
  engine.broadcast_from_root();
  Position at;
  if (config.resume) {
    at = load_checkpoint(comm, config.checkpoint_dir, resume_step, model, *optimizer, engine);
  }
  MetricLog log(root ? config.log_path : std::string(), config.resume, config.force);
  Progress progress(root && config.progress);

  const std::size_t n = static_cast<std::size_t>(comm.size());
  const std::size_t global_batch = n * config.batch;
  std::size_t steps_per_epoch = task->train_size() / global_batch;
  if (config.max_steps_per_epoch > 0) steps_per_epoch = std::min(steps_per_epoch, config.max_steps_per_epoch);
  if (steps_per_epoch == 0) {
    throw InvalidArgument("train: " + std::to_string(task->train_size()) + " training samples " +
                          "make no full step of " + std::to_string(n) + " ranks × batch " +
                          std::to_string(config.batch) + "; lower --batch");
  }

  TrainSummary summary;
  summary.model = config.model;
  summary.data = config.data;
  summary.codec = make_codec(config.codec)->spec();
  summary.ranks = comm.size();
  summary.metric_name = task->metric_name();
  summary.buckets = engine.bucket_count();
  summary.parameters = engine.elements();
  summary.payload_bytes_per_step = engine.payload_bytes();
  summary.compression_ratio = 4.0 * static_cast<double>(engine.elements()) / engine.payload_bytes();
  if (root) {
    log.write({{"event", "start"}, {"model", config.model}, {"data", config.data},
               {"codec", summary.codec}, {"ranks", comm.size()}, {"batch_per_rank", config.batch},
               {"optimizer", optimizer_text(config)}, {"parameters", summary.parameters},
               {"buckets", summary.buckets}, {"payload_bytes_per_step", summary.payload_bytes_per_step},
               {"steps_per_epoch", steps_per_epoch}, {"resumed_at_step", resume_step}});
  }

  const auto start = Clock::now();
  std::vector<StepSplit> splits;
  double training_seconds = 0, sent_bytes = 0;
  bool stopped = false;
  for (std::int64_t epoch = at.epoch; epoch < config.epochs && !stopped; ++epoch) {
    const auto epoch_start = Clock::now();
    const auto order = data::epoch_permutation(task->train_size(), config.seed,
                                               static_cast<std::uint64_t>(epoch));
    for (auto s = at.step_in_epoch; s < static_cast<std::int64_t>(steps_per_epoch); ++s) {
      if (config.stop_after_steps > 0 &&
          summary.steps >= config.stop_after_steps) {
        stopped = true;
        break;
      }
      const auto step_start = Clock::now();
      const std::size_t first = static_cast<std::size_t>(s) * global_batch +
                                static_cast<std::size_t>(comm.rank()) * config.batch;
      const auto batch = task->batch(std::span(order).subspan(first, config.batch), false);
      const double data_seconds = seconds_since(step_start);

      const auto sent_before = comm.transport().stats().bytes_sent;
      const auto compute_start = Clock::now();
      engine.set_steps_finished(static_cast<std::uint64_t>(at.global_step));
      engine.begin_step();
      auto loss = task->loss(batch);
      loss.backward();
      const double compute_seconds = seconds_since(compute_start);
      const double loss_value = loss.item<double>();

      const auto wait_start = Clock::now();
      ReduceTimes reduce;
      bool skipped = false;
      try {
        reduce = engine.finish_step();
      } catch (const NonFiniteError& e) {
        if (!config.skip_nonfinite) {
          throw NonFiniteError(std::string(e.what()) + " (local loss " + std::to_string(loss_value) +
                               "; pass --skip-nonfinite to skip such steps)");
        }
        skipped = true;
        ++at.skipped;
        if (root) log.write({{"event", "skipped"}, {"step", at.global_step}, {"reason", e.what()}});
      }
      const double wait_seconds = seconds_since(wait_start);
      const auto sent = comm.transport().stats().bytes_sent - sent_before;
      sent_bytes += static_cast<double>(sent);

      const auto optimizer_start = Clock::now();
      if (!skipped) {
        engine.snapshot_parameters();
        optimizer->step();
        engine.observe_update(config.lr);
      }
      const double optimizer_seconds = seconds_since(optimizer_start);
      if (!skipped && finite_loss(loss)) {
        at.epoch_loss_sum += loss_value;
        at.epoch_loss_steps += 1;
      }
      ++at.global_step;
      at.step_in_epoch = s + 1;
      ++summary.steps;

      const double step_seconds = seconds_since(step_start);
      splits.push_back({data_seconds, compute_seconds, wait_seconds, optimizer_seconds,
                        reduce.encode, reduce.communicate, reduce.decode});
      training_seconds += step_seconds;
      if (root) {
        Json line{{"event", "step"},         {"step", at.global_step - 1},
                  {"epoch", epoch},          {"loss", loss_value},
                  {"lr", config.lr},         {"seconds", step_seconds},
                  {"data", data_seconds},    {"compute", compute_seconds},
                  {"waiting", wait_seconds}, {"optimizer", optimizer_seconds},
                  {"encode", reduce.encode}, {"communicate", reduce.communicate},
                  {"decode", reduce.decode}, {"payload_bytes", summary.payload_bytes_per_step},
                  {"sent_bytes", sent},
                  {"skipped", skipped}};
        const auto stats = engine.codec(0).last_step_stats();
        if (stats.integer) {
          std::uint64_t largest = 0, clipped = 0;
          for (std::size_t b = 0; b < engine.bucket_count(); ++b) {
            largest = std::max(largest, engine.codec(b).last_step_stats().largest_sent);
            clipped += engine.codec(b).last_step_stats().clipped;
          }
          line["largest_integer_sent"] = largest;
          line["clipped"] = clipped;
        }
        log.write(line);
        progress.update(static_cast<int>(epoch), config.epochs, s,
                        static_cast<std::int64_t>(steps_per_epoch),
                        at.epoch_loss_steps > 0 ? at.epoch_loss_sum / at.epoch_loss_steps : loss_value,
                        static_cast<double>(global_batch) * static_cast<double>(summary.steps) /
                            seconds_since(start));
      }
      if (config.checkpoint_every > 0 &&
          at.global_step % static_cast<std::int64_t>(config.checkpoint_every) == 0) {
        save_checkpoint(comm, config.checkpoint_dir, *task, model, *optimizer, engine, at, config);
      }
    }
    if (stopped) break;
    progress.end_line();
    double train_loss = 0;
    const auto sums = evaluate(comm, *task, at.epoch_loss_sum, at.epoch_loss_steps, &train_loss);
    EpochResult result{static_cast<int>(epoch), train_loss, sums.loss / std::max(sums.predictions, 1.0),
                       task->metric(sums), seconds_since(epoch_start)};
    summary.epochs.push_back(result);
    if (root) {
      log.write({{"event", "epoch"}, {"epoch", epoch}, {"train_loss", result.train_loss},
                 {"test_loss", result.test_loss}, {task->metric_name(), result.test_metric},
                 {"seconds", result.seconds}});
      if (config.progress) {
        std::ostringstream line;
        line << "epoch " << epoch + 1 << "/" << config.epochs << ": train loss "
             << std::setprecision(4) << result.train_loss << ", test loss " << result.test_loss
             << ", test " << task->metric_name() << " " << result.test_metric << " ("
             << std::fixed << std::setprecision(1) << result.seconds << " s)\n";
        std::cerr << line.str();
      }
    }
    at.epoch = epoch + 1;
    at.step_in_epoch = 0;
    at.epoch_loss_sum = at.epoch_loss_steps = 0;
  }
  if (!config.checkpoint_dir.empty()) {
    save_checkpoint(comm, config.checkpoint_dir, *task, model, *optimizer, engine, at, config);
  }
  summary.wall_seconds = seconds_since(start);
  summary.skipped_steps = static_cast<std::size_t>(at.skipped);
  if (!summary.epochs.empty()) {
    summary.final_metric = summary.epochs.back().test_metric;
    summary.final_test_loss = summary.epochs.back().test_loss;
  }
  if (summary.steps > 0) {
    summary.split = median_split(splits);
    if (config.algorithm != Algorithm::native) {
      summary.sent_bytes_per_step = sent_bytes / static_cast<double>(summary.steps);
    }
    summary.steps_per_second = static_cast<double>(summary.steps) / training_seconds;
    summary.samples_per_second = summary.steps_per_second * static_cast<double>(global_batch);
  }
  if (config.return_parameters) {
    for (const auto& p : params) {
      const auto flat = p.detach().contiguous().view(-1);
      summary.final_parameters.insert(summary.final_parameters.end(), flat.data_ptr<float>(),
                                      flat.data_ptr<float>() + flat.numel());
    }
  }
  if (root) {
    log.write({{"event", "summary"}, {task->metric_name(), summary.final_metric},
               {"test_loss", summary.final_test_loss}, {"wall_seconds", summary.wall_seconds},
               {"steps", summary.steps}, {"skipped_steps", summary.skipped_steps},
               {"steps_per_second", summary.steps_per_second},
               {"samples_per_second", summary.samples_per_second},
               {"split", {{"data", summary.split.data}, {"compute", summary.split.compute},
                          {"waiting", summary.split.waiting}, {"optimizer", summary.split.optimizer},
                          {"encode", summary.split.encode}, {"communicate", summary.split.communicate},
                          {"decode", summary.split.decode}}},
               {"payload_bytes_per_step", summary.payload_bytes_per_step},
               {"sent_bytes_per_step", summary.sent_bytes_per_step
                                           ? Json(*summary.sent_bytes_per_step) : Json(nullptr)},
               {"compression_ratio", summary.compression_ratio}});
  }
  return summary;
}

}  // namespace qccl::engines
