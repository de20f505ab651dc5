// The optimizer a training run names (--optimizer sgd | adam | adamw) with
// its settings, built from the run's configuration; the embedding tables'
// group takes --embedding-optimizer and --embedding-lr.
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "qccl/training/train_config.h"

namespace qccl::engines {

// The in-place optimizer (optimizers.h) that `config` names, over
// `parameters`. The ones among them in `tables` (embedding tables with
// sparse gradients) form a group of their own with the run's row update
// and learning rate when either is not the default; InvalidArgument for an
// unknown name, or a row update without tables.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& config,
                                                        std::vector<torch::Tensor> parameters,
                                                        const std::vector<torch::Tensor>& tables = {});

// The weights of `model`'s embeddings whose gradients are sparse.
std::vector<torch::Tensor> sparse_embedding_tables(torch::nn::Module& model);

}  // namespace qccl::engines
