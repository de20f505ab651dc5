#include "qccl/training/checkpoint.h"

#include <filesystem>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/engines/sharded.h"
#include "qccl/training/checkpoint_identity.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

// This rank's identity in `run`: the bounds of the tensors the optimizer
// updates are those of consecutive shards for the sharded engine (its groups
// are split in rank order), of whole tensors otherwise. Every rank calls it.
RankIdentity identity_of(Communicator& comm, std::uint64_t run,
                         const torch::optim::Optimizer& optimizer, const Engine& engine) {
  std::vector<std::int64_t> sizes;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) sizes.push_back(p.numel());
  }
  const bool sharded = dynamic_cast<const ShardedEngine*>(&engine) != nullptr;
  return {run, comm.rank(), comm.size(),
          sharded ? consecutive_shards(comm, sizes) : whole_tensors(sizes)};
}

// This rank's state as the bytes of a libtorch archive. Serialized in
// memory rather than to the file: libtorch's own file writer fails on a full
// disk by throwing from a destructor, which ends the process; here the bytes
// go through write_file_atomically, whose every write is checked.
std::string serialized(torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                       const Engine& engine, const Position& at, const RankIdentity& identity) {
  torch::serialize::OutputArchive archive;
  archive.write("identity", torch::tensor(identity_words(identity), torch::kInt64));
  for (const auto& item : model.named_parameters()) archive.write("model." + item.key(), item.value());
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  engine.save(archive);
  archive.write("position", torch::tensor({at.global_step, at.epoch, at.step_in_epoch, at.skipped,
                                           static_cast<std::int64_t>(identity.ranks),
                                           at.skipped_in_a_row}));
  archive.write("epoch_loss", torch::tensor({at.epoch_loss_sum, at.epoch_loss_steps},
                                            torch::kFloat64));
  std::string bytes;
  archive.save_to([&](const void* data, std::size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  return bytes;
}

void remove_step_file(const std::string& file) {
  std::error_code ignored;
  fs::remove(file, ignored);
  fs::remove(fs::path(file).parent_path(), ignored);  // once the last rank's file is gone
}

void remove_older_steps(const std::string& dir, std::int64_t step, int rank) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || name == "step-" + std::to_string(step)) continue;
    remove_step_file((entry.path() / ("rank-" + std::to_string(rank) + ".pt")).string());
  }
}

// Checks `bytes` against what the manifest recorded for them.
void check_file(const std::string& file, const std::string& bytes, const RankFile& recorded) {
  if (static_cast<std::int64_t>(bytes.size()) != recorded.bytes) {
    throw InvalidArgument("'" + file + "' has " + std::to_string(bytes.size()) +
                          " bytes, the manifest recorded " + std::to_string(recorded.bytes) +
                          ": it is truncated or damaged");
  }
  if (checksum64(bytes_of(bytes)) != recorded.checksum) {
    throw InvalidArgument("'" + file + "' is damaged: its checksum differs from the one the "
                          "manifest recorded when it was written");
  }
}

// Checks the identity `archive` records against `expected`, before anything
// is read from it. A checkpoint whose manifest records no run (format 2)
// has files without identity, which are read as they are.
void check_identity_of(const std::string& file, torch::serialize::InputArchive& archive,
                       const RankIdentity& expected) {
  if (expected.run == 0) return;
  torch::Tensor words;
  if (!archive.try_read("identity", words)) {
    throw InvalidArgument("'" + file + "' records no identity (written by an older qccl) while "
                          "its manifest records run " + checksum_text(expected.run) +
                          ": it was copied in from another checkpoint");
  }
  words = words.to(torch::kInt64).contiguous();
  RankIdentity held;
  try {
    held = identity_from_words(std::span(words.data_ptr<std::int64_t>(),
                                         static_cast<std::size_t>(words.numel())));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("'" + file + "': " + e.what());
  }
  check_identity(file, held, expected);
}

// Model, optimizer and engine state, and the position, from `archive`.
Position restored_state(const std::string& file, torch::serialize::InputArchive& archive,
                        std::int64_t step, torch::nn::Module& model,
                        torch::optim::Optimizer& optimizer, Engine& engine) {
  try {
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
    at.skipped_in_a_row = position[5].item<std::int64_t>();
    at.epoch_loss_sum = epoch_loss[0].item<double>();
    at.epoch_loss_steps = epoch_loss[1].item<double>();
    if (at.global_step != step) throw InvalidArgument("it holds step " + std::to_string(at.global_step));
    return at;
  } catch (const c10::Error& e) {
    throw InvalidArgument("cannot read '" + file + "' (corrupt, or from another model or " +
                          "codec): " + e.what_without_backtrace());
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("'" + file + "' does not fit this run: " + e.what());
  }
}

// The file's identity first, then its state.
Position restored(const std::string& file, const std::string& bytes, std::int64_t step,
                  const RankIdentity& expected, torch::nn::Module& model,
                  torch::optim::Optimizer& optimizer, Engine& engine) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(bytes.data(), bytes.size());
  } catch (const c10::Error& e) {
    throw InvalidArgument("cannot read '" + file + "' (corrupt, or not a checkpoint): " +
                          e.what_without_backtrace());
  }
  check_identity_of(file, archive, expected);
  Position at = restored_state(file, archive, step, model, optimizer, engine);
  at.run = expected.run;
  return at;
}

}  // namespace

void save_checkpoint(Communicator& comm, const std::string& dir, const std::string& metric,
                     torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const Engine& engine, const Position& at, const TrainConfig& config) {
  const std::string file = checkpoint_file(dir, at.global_step, comm.rank());
  const std::string step = "checkpoint of step " + std::to_string(at.global_step);
  const std::uint64_t run = at.run != 0 ? at.run : new_run_identity(comm);
  const RankIdentity identity = identity_of(comm, run, optimizer, engine);
  RankFile written;
  std::string failure;
  try {
    const std::string bytes = serialized(model, optimizer, engine, at, identity);
    fs::create_directories(fs::path(file).parent_path());
    write_file_atomically(file, bytes);
    written = {static_cast<std::int64_t>(bytes.size()), checksum64(bytes_of(bytes))};
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (const auto failures = failures_of_ranks(comm, "checkpoint files written", failure);
      !failures.empty()) {
    remove_step_file(file);
    throw IoError(step + " not saved: " + failures + ". The previous checkpoint in '" + dir +
                  "', if any, is still the latest");
  }

  const std::int64_t row[2] = {written.bytes, static_cast<std::int64_t>(written.checksum)};
  const auto table = rows_of_ranks(comm, row, "checkpoint checksums");
  std::string manifest_failure;
  if (comm.rank() == 0) {
    Manifest manifest{at.global_step, at.epoch, comm.size(), run, metric,
                      resume_settings(config, comm.size()), {}};
    for (std::size_t r = 0; r < table.size(); r += 2) {
      manifest.files.push_back({table[r], static_cast<std::uint64_t>(table[r + 1])});
    }
    try {
      write_file_atomically(dir + "/latest.json", manifest_text(manifest));
    } catch (const std::exception& e) {
      manifest_failure = e.what();
    }
  }
  if (const auto failures = failures_of_ranks(comm, "checkpoint manifest written", manifest_failure);
      !failures.empty()) {
    throw IoError(step + " not saved: " + failures + ". The previous checkpoint in '" + dir +
                  "', if any, is still the latest");
  }
  remove_older_steps(dir, at.global_step, comm.rank());
}

Position load_checkpoint(Communicator& comm, const std::string& dir, const Manifest& manifest,
                         torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                         Engine& engine) {
  const std::string file = checkpoint_file(dir, manifest.step, comm.rank());
  const RankIdentity expected = identity_of(comm, manifest.run, optimizer, engine);
  Position at;
  std::string failure;
  try {
    const std::string bytes = read_whole_file(file);
    check_file(file, bytes, manifest.files.at(static_cast<std::size_t>(comm.rank())));
    at = restored(file, bytes, manifest.step, expected, model, optimizer, engine);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (const auto failures = failures_of_ranks(comm, "checkpoint files read", failure);
      !failures.empty()) {
    throw InvalidArgument("--resume: " + failures +
                          ". Resume from an intact copy of the checkpoint, or start afresh "
                          "(--force, or another --checkpoint-dir)");
  }
  return at;
}

}  // namespace qccl::engines
