#include "qccl/training/train_output.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/training/output_aliases.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

Progress::Progress(bool enabled)
    : enabled_(enabled), terminal_(enabled && isatty(STDERR_FILENO) == 1) {}

void Progress::update(int epoch, int epochs, std::int64_t step, std::int64_t steps, double loss,
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

void Progress::end_line() {
  if (terminal_) std::cerr << "\n";
}

MetricLog::MetricLog(const std::string& path, bool resume, bool force) {
  if (path.empty()) return;
  std::error_code error;
  if (!resume && !force && std::filesystem::is_regular_file(path, error)) {
    throw InvalidArgument("log '" + path + "' exists; pass --resume to append to it, --force "
                          "to replace it, or choose another --log");
  }
  file_ = std::make_unique<LineFile>(path, !resume);
}

void MetricLog::write(const nlohmann::json& line) {
  if (file_) file_->append(line.dump());
}

void MetricLog::sync() {
  if (file_) file_->sync();
}

std::vector<OutputPath> outputs_of(const TrainConfig& config) {
  std::vector<OutputPath> outputs;
  if (!config.log_path.empty()) {
    outputs.push_back({config.log_path, "the log", OutputPath::Kind::appended, false});
  }
  if (!config.checkpoint_dir.empty()) {
    outputs.push_back({config.checkpoint_dir, "--checkpoint-dir", OutputPath::Kind::directory, true});
  }
  return outputs;
}

void check_outputs(Communicator& comm, const std::vector<OutputPath>& outputs) {
  // Aliases first, before any rank creates a directory: rank 0 checks them
  // (the outputs are every rank's), every rank learns the answer.
  std::string aliases;
  try {
    if (comm.rank() == 0) check_outputs_apart(outputs);
  } catch (const InvalidArgument& e) {
    aliases = e.what();
  }
  if (const auto failures = failures_of_ranks(comm, "output paths apart", aliases);
      !failures.empty()) {
    throw InvalidArgument("train: " + failures + " (checked before training)");
  }
  std::string failure;
  try {
    for (const auto& output : outputs) {
      if (!output.every_rank && comm.rank() != 0) continue;
      switch (output.kind) {
        case OutputPath::Kind::replaced: check_can_replace(output.path, output.what); break;
        case OutputPath::Kind::appended: check_can_append(output.path, output.what); break;
        case OutputPath::Kind::directory:
          check_can_write_into(output.path, output.what,
                               ".write-test-rank-" + std::to_string(comm.rank()) + "-" +
                                   std::to_string(::getpid()));
          break;
      }
    }
  } catch (const InvalidArgument& e) {
    failure = e.what();
  }
  if (const auto failures = failures_of_ranks(comm, "output paths checked", failure);
      !failures.empty()) {
    throw InvalidArgument("train: " + failures + " (checked before training)");
  }
}

nlohmann::json summary_json(const TrainSummary& s) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : s.epochs) {
    epochs.push_back({{"epoch", e.epoch}, {"train_loss", e.train_loss}, {"test_loss", e.test_loss},
                      {s.metric_name, e.test_metric}, {"seconds", e.seconds}});
  }
  nlohmann::json summary = {{"model", s.model},
          {"data", s.data},
          {"engine", s.engine},
          {"codec", s.codec},
          {"weights_codec", s.weights_codec},
          {"ranks", s.ranks},
          {s.metric_name, s.final_metric},
          {"test_loss", s.final_test_loss},
          {"wall_seconds", s.wall_seconds},
          {"steps", s.steps},
          {"skipped_steps", s.skipped_steps},
          {"steps_per_second", s.steps_per_second},
          {"samples_per_second", s.samples_per_second},
          {"step_seconds",
           {{"data", s.split.data}, {"compute", s.split.compute}, {"waiting", s.split.waiting},
            {"optimizer", s.split.optimizer}, {"encode", s.split.encode},
            {"communicate", s.split.communicate}, {"decode", s.split.decode}}},
          {"page_faults_per_step",
           {{"training", s.split.faults}, {"optimizer", s.split.optimizer_faults},
            {"communication", s.split.communication_faults}}},
          {"steady_page_faults",
           {{"steps", s.steady_faults.steps}, {"mean", s.steady_faults.mean},
            {"max", s.steady_faults.max}}},
          {"parameters", s.parameters},
          {"buckets", s.buckets},
          {"bucket_policy", s.bucket_policy},
          {"payload_bytes_per_step", s.payload_bytes_per_step},
          {"sent_bytes_per_step",
           s.sent_bytes_per_step ? nlohmann::json(*s.sent_bytes_per_step) : nlohmann::json(nullptr)},
          {"compression_ratio", s.compression_ratio},
          {"peak_rss_bytes", s.peak_rss_bytes},
          {"epochs", epochs}};
  if (s.plan) summary["plan"] = plan_json(*s.plan);
  return summary;
}

nlohmann::json plan_json(const PlanReport& p) {
  nlohmann::json predictions = nlohmann::json::array();
  for (const auto& prediction : p.predictions) {
    predictions.push_back({{"name", prediction.name},
                           {"groups", prediction.groups.size()},
                           {"sizes", prediction.groups},
                           {"seconds", prediction.seconds}});
  }
  return {{"profiled_steps", p.profiled_steps},
          {"tensors", p.tensors},
          {"profile_seconds",
           {{"backward", p.backward_seconds}, {"optimizer", p.optimizer_seconds},
            {"other", p.other_seconds}}},
          {"codec_cost", {{"fixed_seconds", p.codec_fixed}, {"seconds_per_element", p.codec_per_element}}},
          {"communication_cost",
           {{"fixed_seconds", p.communication_fixed},
            {"seconds_per_element", p.communication_per_element},
            {"reduction_seconds_per_element", p.reduction_per_element}}},
          {"wire_bytes_per_element", p.wire_bytes_per_element},
          {"link_bytes_per_second", p.link_bytes_per_second},
          {"best_seconds_by_groups", p.best_by_groups},
          {"predictions", predictions},
          {"search_seconds", p.search_seconds}};
}


}  // namespace qccl::engines
