// The optimizer a training run names (--optimizer sgd | adam | adamw) with
// its settings, built from the run's configuration.
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "qccl/training/train_config.h"

namespace qccl::engines {

// The in-place optimizer (optimizers.h) that `config` names, over
// `parameters`; InvalidArgument for an unknown name.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& config,
                                                        std::vector<torch::Tensor> parameters);

}  // namespace qccl::engines
