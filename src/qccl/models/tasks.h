// A training task: a model and the data it learns from, turned into
// tensors. The engine and the trainer see every task through this
// interface: sample counts, a batch from sample indices, the loss and the
// test metric.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qccl/engines/block_runner.h"
#include "qccl/models/model_config.h"

namespace qccl::engines {

struct Batch {
  torch::Tensor input;
  torch::Tensor target;
};

// Sums over a set of samples, for metrics: the task's loss summed over
// predictions, and the correct predictions among `predictions`.
struct EvalSums {
  double loss = 0, correct = 0, predictions = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string metric_name() const = 0;  // "accuracy" or "perplexity"
  virtual std::size_t train_size() const = 0;
  virtual std::size_t test_size() const = 0;
  virtual Batch batch(std::span<const std::uint32_t> samples, bool test) const = 0;
  virtual torch::nn::Module& model() = 0;
  // Mean loss over the batch's predictions (what is differentiated).
  virtual torch::Tensor loss(const Batch& batch) = 0;
  // Summed loss and correct predictions, without gradients.
  virtual EvalSums evaluate(const Batch& batch) = 0;
  // The model's penultimate layer on `input` (a batch's input), [N, F],
  // without gradients: the features a Fréchet distance compares. Throws
  // InvalidArgument for a model without such a layer (only `cnn` has one).
  virtual torch::Tensor features(const torch::Tensor& input);
  // The language models' next-character logits on `input`, [N, L, V],
  // without gradients. Throws InvalidArgument for the other models.
  virtual torch::Tensor next_token_logits(const torch::Tensor& input);
  // The model's blocks in forward order, which the sharded engine gathers
  // one at a time (empty: the model is one unit), and the runner the
  // model's forward then hands each block to (null: it runs them itself).
  virtual std::vector<torch::nn::Module*> blocks() { return {}; }
  virtual void set_block_runner(BlockRunner* /*runner*/) {}
  // The metric from sums over the whole test set.
  double metric(const EvalSums& sums) const;
  // Sets every parameter from counter-based random numbers of `seed`
  // (deterministic on any thread, no global generator).
  virtual void initialize(std::uint64_t seed) = 0;
};

// Fashion-MNIST's training mean and standard deviation of pixels in [0, 1]:
// the image models see (p − mean)/std.
inline constexpr float kFashionMnistMean = 0.2860f, kFashionMnistStd = 0.3530f;

// Sets every parameter of `module` from counter-based random numbers of
// `seed` with PyTorch's default bounds for linear and convolution layers,
// U(±1/√fan_in) (fan_in: a weight's elements over its first dimension, the
// last weight's for a bias); with `fixed_bound` > 0, U(±fixed_bound) for
// all. Deterministic on any thread, no global generator.
void initialize_module(torch::nn::Module& module, std::uint64_t seed, double fixed_bound = 0);

// Builds the task for config.model on config.data, reading the data.
// Throws InvalidArgument for an unknown model, an unknown dataset, a model
// that cannot learn from that dataset, or missing or corrupt data files.
std::unique_ptr<Task> make_task(const ModelConfig& config);

}  // namespace qccl::engines
