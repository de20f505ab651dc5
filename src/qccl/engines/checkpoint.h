// Checkpoints of a data-parallel run, and resuming from them exactly.
//
// Layout: DIR/step-S/rank-R.pt per rank (each rank's codec state
// differs: IntDIANA's shifts, the per-rank random streams), and DIR/latest.json
// written by rank 0 only after every rank's file is complete — so a crash
// while writing leaves the previous checkpoint in force. Older step folders
// are removed after the new manifest is in place.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/engines/engine.h"
#include "qccl/engines/train_config.h"

namespace qccl::engines {

// Where training stands: enough to continue exactly.
struct Position {
  std::int64_t global_step = 0, epoch = 0, step_in_epoch = 0, skipped = 0;
  double epoch_loss_sum = 0, epoch_loss_steps = 0;
};

// Saves this rank's state at `at`; every rank calls it at the same step.
// `metric` goes into the manifest.
void save_checkpoint(Communicator& comm, const std::string& dir, const std::string& metric,
                     torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const Engine& engine, const Position& at, const TrainConfig& config);

// The step of DIR's latest checkpoint; throws InvalidArgument when there is
// none, its manifest is corrupt, or it was written by another rank count.
std::int64_t latest_checkpoint_step(const std::string& dir, int ranks);

// Restores model, optimizer and engine (codec) states from this rank's file of
// checkpoint `step`; throws InvalidArgument naming the file when it is
// missing, corrupt, or from another model or codec.
Position load_checkpoint(Communicator& comm, const std::string& dir, std::int64_t step,
                         torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                         Engine& engine);

}  // namespace qccl::engines
