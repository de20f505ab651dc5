#include "qccl/training/checkpoint_manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"

namespace qccl::engines {
namespace {

using Json = nlohmann::json;

// 2: checksums and settings; 3: the run's identity, which each rank file
// repeats. Format 2 is still read (its files are checked without identity).
constexpr int kFormat = 3;
constexpr int kOldestFormat = 2;

std::string model_text(const TrainConfig& c) {
  std::ostringstream text;
  text << c.model;
  if (c.model == "char-lstm") {
    text << " (hidden " << c.hidden << ", sequence length " << c.sequence_length << ")";
  } else if (c.model == "gpt") {
    text << " (width " << c.hidden << ", " << c.layers << " layers, sequence length "
         << c.sequence_length << gpt_outliers_text(c) << ")";
  } else if (c.model == "recommender") {
    text << " (" << c.fields << " fields of " << c.values_per_field << " values, "
         << c.click_samples << " click samples)";
  }
  return text.str();
}

std::string optimizer_settings(const TrainConfig& c) {
  std::ostringstream text;
  text << c.optimizer << " lr=" << c.lr << " weight-decay=" << c.weight_decay;
  if (c.optimizer == "sgd") text << " momentum=" << c.momentum;
  else text << " betas=" << c.beta1 << "," << c.beta2 << " eps=" << c.eps;
  text << embedding_optimizer_text(c);
  return text.str();
}

const std::string* find(const std::vector<Setting>& settings, const std::string& name) {
  for (const auto& s : settings) {
    if (s.name == name) return &s.value;
  }
  return nullptr;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw InvalidArgument("--resume: '" + path + "' " + why +
                        "; start afresh with --force or another --checkpoint-dir");
}

// The run a manifest records, after checking its format: 0 for format 2
// (before files recorded their identity); older and newer ones refused.
std::uint64_t run_of(const std::string& path, const Json& j) {
  const int format = j.contains("format") && j["format"].is_number_integer()
                         ? j["format"].get<int>()
                         : 1;  // the first manifests had no "format"
  if (format < kOldestFormat) {
    corrupt(path, "has no checksums or settings (format " + std::to_string(format) +
                      ", written by an older qccl); it cannot be verified");
  }
  if (format > kFormat) {
    corrupt(path, "is of format " + std::to_string(format) + ", newer than this qccl reads (" +
                      std::to_string(kFormat) + "); resume with the qccl that wrote it");
  }
  if (format < 3) return 0;
  if (!j.contains("run")) corrupt(path, "lacks 'run'");
  const auto run = std::stoull(j["run"].get<std::string>(), nullptr, 16);
  if (run == 0) corrupt(path, "records run 0, which no run has");
  return run;
}

}  // namespace

std::string checkpoint_file(const std::string& dir, std::int64_t step, int rank) {
  return dir + "/step-" + std::to_string(step) + "/rank-" + std::to_string(rank) + ".pt";
}

bool is_checkpoint_entry(const std::string& name) {
  return name == "latest.json" || name == "latest.json.partial" || name == kCheckpointLockName ||
         name.rfind("step-", 0) == 0;
}

namespace {

// The complete rank files in `dir`'s step folders ("step-4/rank-0.pt"),
// sorted; none where `dir` cannot be read.
std::vector<std::string> rank_files_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> found;
  for (fs::directory_iterator step(dir, error), end; !error && step != end; step.increment(error)) {
    const auto folder = step->path().filename().string();
    if (folder.rfind("step-", 0) != 0 || !step->is_directory(error)) continue;
    for (fs::directory_iterator file(step->path(), error); !error && file != end;
         file.increment(error)) {
      const auto name = file->path().filename().string();
      if (name.rfind("rank-", 0) == 0 && file->path().extension() == ".pt") {
        found.push_back(folder + "/" + name);
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

// A manifest, or a complete rank file in any step folder: a checkpoint
// whose manifest was lost still holds the only copy of the run's state.
void check_fresh_start(const std::string& dir) {
  std::error_code error;
  if (std::filesystem::exists(dir + "/latest.json", error)) {
    throw InvalidArgument("'" + dir + "' holds a checkpoint; pass --resume to continue it, --force "
                          "to overwrite it, or choose another directory");
  }
  const auto found = rank_files_in(dir);
  if (found.empty()) return;
  const auto more = found.size() > 1 ? " and " + std::to_string(found.size() - 1) + " more" : "";
  throw InvalidArgument("'" + dir + "' holds checkpoint files (" + found.front() + more +
                        ") but no manifest (latest.json): a checkpoint whose manifest was lost, "
                        "which a fresh run would delete. Move them away, pass --force to replace "
                        "them, or choose another directory");
}

std::vector<Setting> resume_settings(const TrainConfig& c, int ranks) {
  const std::string data = c.data.empty() ? dataset_for_model(c.model) : c.data;
  return {{"model", model_text(c)},
          {"data", data},
          {"codec", exchange_settings(c)},
          {"algo", std::string(to_string(c.algorithm))},
          {"ranks", std::to_string(ranks)},
          {"batch", std::to_string(c.batch)},
          {"optimizer", optimizer_settings(c)},
          {"lr-schedule", c.lr_schedule + ", warm-up " + std::to_string(c.warmup_steps) + " steps"},
          {"epochs", std::to_string(c.epochs)},
          {"max-steps-per-epoch", std::to_string(c.max_steps_per_epoch)},
          {"seed", std::to_string(c.seed)},
          {"buckets", bucket_settings(c)}};
}

std::string manifest_text(const Manifest& m) {
  Json settings = Json::object();
  for (const auto& s : m.settings) settings[s.name] = s.value;
  Json files = Json::array();
  for (std::size_t r = 0; r < m.files.size(); ++r) {
    files.push_back({{"rank", r},
                     {"file", "step-" + std::to_string(m.step) + "/rank-" + std::to_string(r) + ".pt"},
                     {"bytes", m.files[r].bytes},
                     {"checksum", checksum_text(m.files[r].checksum)}});
  }
  const Json manifest{{"format", kFormat}, {"step", m.step},         {"epoch", m.epoch},
                      {"ranks", m.ranks},  {"metric", m.metric},     {"settings", settings},
                      {"files", files},    {"run", checksum_text(m.run)}};
  return manifest.dump(2) + "\n";
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/latest.json";
  std::error_code missing;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, missing))) {
    throw InvalidArgument("--resume: no checkpoint in '" + dir + "' (" + path +
                          " is missing); run without --resume to start fresh");
  }
  std::string text;
  try {
    text = read_whole_file(path);  // never a directory, FIFO or device
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--resume: the checkpoint's manifest: ") + e.what());
  }
  Manifest m;
  try {
    const Json j = Json::parse(text);
    m.run = run_of(path, j);
    for (const char* key : {"step", "epoch", "ranks", "settings", "files"}) {
      if (!j.contains(key)) corrupt(path, std::string("lacks '") + key + "'");
    }
    m.step = j["step"].get<std::int64_t>();
    m.epoch = j["epoch"].get<std::int64_t>();
    m.ranks = j["ranks"].get<int>();
    m.metric = j.value("metric", "");
    for (const auto& [name, value] : j["settings"].items()) {
      m.settings.push_back({name, value.get<std::string>()});
    }
    for (const auto& file : j["files"]) {
      m.files.push_back({file.at("bytes").get<std::int64_t>(),
                         std::stoull(file.at("checksum").get<std::string>(), nullptr, 16)});
    }
  } catch (const Json::exception& e) {
    throw InvalidArgument("--resume: '" + path + "' is corrupt (" + e.what() + ")");
  } catch (const std::logic_error& e) {  // stoull
    throw InvalidArgument("--resume: '" + path + "' is corrupt (a checksum or the run is not hex)");
  }
  if (m.ranks < 1 || static_cast<int>(m.files.size()) != m.ranks) {
    corrupt(path, "lists " + std::to_string(m.files.size()) + " rank files for " +
                      std::to_string(m.ranks) + " ranks");
  }
  return m;
}

void check_resume_settings(const Manifest& manifest, const std::vector<Setting>& now,
                           const std::string& dir) {
  const auto* ranks = find(now, "ranks");
  if (ranks != nullptr && *ranks != std::to_string(manifest.ranks)) {
    throw InvalidArgument("--resume: the checkpoint in '" + dir + "' was written by " +
                          std::to_string(manifest.ranks) + " ranks; resume with that many " +
                          "(this run has " + *ranks + ")");
  }
  const auto* schedule = find(manifest.settings, "lr-schedule");
  const bool constant = schedule != nullptr && schedule->rfind("constant,", 0) == 0;
  for (const auto& setting : now) {
    // More (or fewer) epochs at a constant rate: every step runs as it would
    // have. (A changed schedule is refused by its own setting, checked first.)
    if (setting.name == "epochs" && constant) continue;
    const auto* recorded = find(manifest.settings, setting.name);
    if (recorded == nullptr) {
      throw InvalidArgument("--resume: '" + dir + "/latest.json' does not record " +
                            setting.name + "; start afresh with --force or another --checkpoint-dir");
    }
    if (*recorded != setting.value) {
      throw InvalidArgument("--resume: the checkpoint in '" + dir + "' was written with " +
                            setting.name + " '" + *recorded + "'; this run has " + setting.name +
                            " '" + setting.value + "'. A resumed run must repeat the settings of "
                            "the run it continues; resume with the same " + setting.name +
                            ", or start afresh (--force, or another --checkpoint-dir)");
    }
  }
}

}  // namespace qccl::engines
