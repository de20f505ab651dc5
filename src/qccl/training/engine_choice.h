// The engine a training run names (--engine data-parallel | sharded), built
// for its model from the run's settings.
#pragma once

#include <memory>

#include "qccl/collectives/communicator.h"
#include "qccl/engines/engine.h"
#include "qccl/models/tasks.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

// Builds config.engine for `task`'s model (collective: every rank checks
// that the others built the same). A sharded engine runs the model's
// blocks (Task::set_block_runner). InvalidArgument for an unknown name.
std::unique_ptr<Engine> make_engine(Communicator& comm, const TrainConfig& config, Task& task);

}  // namespace qccl::engines
