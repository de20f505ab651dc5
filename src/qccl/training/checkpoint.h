// Checkpoints of a training run (either engine), and resuming from them exactly.
//
// Layout: DIR/step-S/rank-R.pt per rank (each rank's codec state differs:
// IntDIANA's shifts, the per-rank random streams), and DIR/latest.json
// (checkpoint_manifest.h), written by rank 0 only after every rank's file is
// complete and flushed, with each file's size and checksum — so a crash or a
// full disk while saving leaves the previous checkpoint in force, and a file
// damaged later is refused when read. Older step folders are removed after
// the new manifest is in place.
//
// Each rank file records what it holds (checkpoint_identity.h): the run,
// the rank and rank count, and this rank's shard bounds. Loading checks it
// before anything else, so files swapped between ranks or copied in from
// another run are refused even when their manifest entries came along.
//
// Saving and loading end with every rank agreeing on the outcome: when one
// rank cannot write or read its file, every rank stops with the same error
// (naming the file), none waits for the others until the timeout.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/training/checkpoint_manifest.h"
#include "qccl/engines/engine.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

// Where training stands: enough to continue exactly.
struct Position {
  std::int64_t global_step = 0, epoch = 0, step_in_epoch = 0;
  std::int64_t skipped = 0, skipped_in_a_row = 0;  // steps with NaN/Inf, skipped
  double epoch_loss_sum = 0, epoch_loss_steps = 0;
  // The run's identity (checkpoint_identity.h): chosen at its first start,
  // kept across resumes. 0 until chosen; a checkpoint saved at 0 gets one of
  // its own.
  std::uint64_t run = 0;
};

// Saves this rank's state at `at`; every rank calls it at the same step.
// `metric` goes into the manifest. Throws IoError on every rank, naming the
// file, when any rank's file or the manifest cannot be written; the previous
// checkpoint then stays the latest.
void save_checkpoint(Communicator& comm, const std::string& dir, const std::string& metric,
                     torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const Engine& engine, const Position& at, const TrainConfig& config);

// Restores model, optimizer and engine (codec) states from this rank's file of
// the checkpoint `manifest` describes, after checking the file's size and
// checksum against it, and its identity against this rank's and the
// manifest's run. Throws InvalidArgument on every rank, naming the file,
// when any rank's file is missing, damaged, another rank's or run's, or
// from another model or codec. The position's run is the manifest's (0 for
// a manifest written before files recorded their identity).
Position load_checkpoint(Communicator& comm, const std::string& dir, const Manifest& manifest,
                         torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                         Engine& engine);

}  // namespace qccl::engines
