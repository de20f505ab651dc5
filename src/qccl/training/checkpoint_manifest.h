// A checkpoint's manifest, DIR/latest.json: which step it holds, each rank
// file's size and checksum (so a damaged file is found before it is
// parsed), and the settings a resumed run must share with the run it
// continues (so that it ends bitwise equal to an uninterrupted run).
// Torch-free: the manifest is JSON, read and checked before any model exists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/training/train_config.h"

namespace qccl::engines {

// One rank's checkpoint file as written.
struct RankFile {
  std::int64_t bytes = 0;
  std::uint64_t checksum = 0;  // checksum64 of the whole file
};

// A setting that a resumed run must repeat, named as the user knows it.
struct Setting {
  std::string name, value;
};

struct Manifest {
  std::int64_t step = 0, epoch = 0;
  int ranks = 0;
  // The run's identity (checkpoint_identity.h), which every rank file
  // repeats; 0 in a manifest written before files recorded their identity.
  std::uint64_t run = 0;
  std::string metric;
  std::vector<Setting> settings;
  std::vector<RankFile> files;  // by rank
};

// DIR/step-S/rank-R.pt.
std::string checkpoint_file(const std::string& dir, std::int64_t step, int rank);

// The lock a run holds on its checkpoint directory (checkpoint_lock.h).
inline constexpr const char* kCheckpointLockName = ".lock";

// Whether `name`, an entry of a checkpoint directory, is one that saving a
// checkpoint writes, replaces or removes: latest.json (and latest.json.partial),
// the lock, the step-S folders.
bool is_checkpoint_entry(const std::string& name);

// For a fresh run (neither --resume nor --force): InvalidArgument when `dir`
// holds a checkpoint — its manifest, or rank files without one (a manifest
// lost or deleted), which the fresh run's first checkpoint would remove.
void check_fresh_start(const std::string& dir);

// The settings that make a resume exact: model (and its sizes), data,
// codec, algorithm, ranks, batch, optimizer, learning-rate schedule,
// epochs, steps per epoch, seed and buckets.
std::vector<Setting> resume_settings(const TrainConfig& config, int ranks);

std::string manifest_text(const Manifest& manifest);

// Reads DIR/latest.json; InvalidArgument when it is missing, corrupt, or
// lacks a field. Format 2, written before rank files recorded their
// identity, is read with run 0; older ones are refused, naming the format.
Manifest read_manifest(const std::string& dir);

// InvalidArgument when `now` differs from what `manifest` recorded, naming
// the first setting that differs and both values. Only --epochs may change,
// and only under the constant schedule (a decaying schedule spreads over
// the run's length, so it would change every later step's rate).
void check_resume_settings(const Manifest& manifest, const std::vector<Setting>& now,
                           const std::string& dir);

}  // namespace qccl::engines
