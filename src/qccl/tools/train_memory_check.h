// `qccl train` and `qccl plan` refuse, before any rank starts, a run that
// cannot fit in this host's free memory, under this process's
// address-space limit (ulimit -v) or under its control group's memory
// limit (training/memory_estimate.h), naming the estimate, the limit and
// the options to change.
#pragma once

#include "qccl/tools/launch_options.h"
#include "qccl/training/train_config.h"

namespace qccl::tools {

// The ranks on this host: --ranks N threads in this process, or under
// mpirun the processes OpenMPI started here (OMPI_COMM_WORLD_LOCAL_SIZE),
// one rank each. InvalidArgument when the estimate exceeds MemAvailable,
// or this process's share exceeds what its limits leave; a limit that
// cannot be read is not checked.
void check_training_fits(const engines::TrainConfig& config, const LaunchOptions& launch);

}  // namespace qccl::tools
