// The reference the engines' fp32 runs are compared with: plain libtorch
// SGD in one process on the ranks' batches concatenated, from the same
// initialisation and samples, and the comparisons themselves.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "qccl/data/epoch_order.h"
#include "qccl/models/tasks.h"
#include "qccl/training/train_config.h"

namespace qccl::engines::test_support {

// Every parameter of `module`, flattened in registration order.
inline std::vector<float> flat_parameters(torch::nn::Module& module) {
  std::vector<float> flat;
  for (const auto& p : module.parameters()) {
    const auto v = p.detach().contiguous().view(-1);
    flat.insert(flat.end(), v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  }
  return flat;
}

// `steps` SGD steps (config's lr and momentum) of one process with batch
// ranks·config.batch on the first epoch's samples from `shift` on.
inline std::vector<float> one_process_sgd(const TrainConfig& config, int ranks, std::size_t steps,
                                          std::size_t shift = 0) {
  auto single = config;
  single.batch = config.batch * static_cast<std::size_t>(ranks);
  auto task = make_task(single);
  task->initialize(single.seed);
  std::vector<torch::Tensor> params = task->model().parameters();
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(single.lr).momentum(single.momentum));
  const auto order = data::epoch_permutation(task->train_size(), single.seed, 0);
  for (std::size_t s = 0; s < steps; ++s) {
    sgd.zero_grad();
    task->loss(task->batch(std::span(order).subspan(shift + s * single.batch, single.batch), false))
        .backward();
    sgd.step();
  }
  return flat_parameters(task->model());
}

// The largest |a[i] − b[i]| (a failure if the lengths differ).
inline double worst_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(double{a[i]} - double{b[i]}));
  }
  return worst;
}

}  // namespace qccl::engines::test_support
