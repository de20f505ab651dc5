#include "qccl/engines/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_sum.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string checkpoint_file(const std::string& dir, std::int64_t step, int rank) {
  return dir + "/step-" + std::to_string(step) + "/rank-" + std::to_string(rank) + ".pt";
}

}  // namespace

void save_checkpoint(Communicator& comm, const std::string& dir, const std::string& metric,
                     torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const Engine& engine, const Position& at, const TrainConfig& c) {
  const std::string file = checkpoint_file(dir, at.global_step, comm.rank());
  fs::create_directories(fs::path(file).parent_path());
  torch::serialize::OutputArchive archive;
  for (const auto& item : model.named_parameters()) archive.write("model." + item.key(), item.value());
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  engine.save(archive);
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
                        {"data", c.data},            {"codec", engine.codec_spec()},
                        {"metric", metric}};
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
                         Engine& engine) {
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
    engine.load(archive);
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

}  // namespace qccl::engines
