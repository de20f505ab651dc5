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
  std::string metric;
  std::vector<Setting> settings;
  std::vector<RankFile> files;  // by rank
};

// DIR/step-S/rank-R.pt.
std::string checkpoint_file(const std::string& dir, std::int64_t step, int rank);

// The settings that make a resume exact: model (and its sizes), data,
// codec, algorithm, ranks, batch, optimizer, learning-rate schedule,
// epochs, steps per epoch, seed and buckets.
std::vector<Setting> resume_settings(const TrainConfig& config, int ranks);

std::string manifest_text(const Manifest& manifest);

// Reads DIR/latest.json; InvalidArgument when it is missing, corrupt, or
// lacks a field (an older format).
Manifest read_manifest(const std::string& dir);

// InvalidArgument when `now` differs from what `manifest` recorded, naming
// the first setting that differs and both values. Only --epochs may change,
// and only under the constant schedule (a decaying schedule spreads over
// the run's length, so it would change every later step's rate).
void check_resume_settings(const Manifest& manifest, const std::vector<Setting>& now,
                           const std::string& dir);

}  // namespace qccl::engines
