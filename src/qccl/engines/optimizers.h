// The optimizers training steps with: SGD (momentum, dampening, Nesterov,
// weight decay), Adam and AdamW (AMSGrad too), computed exactly as
// libtorch's — the same tensor operations in the same order, so bitwise the
// same parameters — but without allocating in a step.
//
// libtorch's Adam builds its denominator sqrt(v)/sqrt(1-β₂ᵗ)+ε in two fresh
// parameter-sized tensors per parameter per step, and SGD and Adam add the
// weight decay into another; glibc hands such blocks to the kernel and back,
// so every step page-faults them in again (12.8 M parameters: ~25 000
// faults, ~100 ms a step). Here each temporary is written into a scratch
// buffer allocated by the first step, as large as the largest parameter and
// reused by every parameter of every later step.
//
// The state types and keys are libtorch's own (AdamParamState, ...), so a
// checkpoint written by either class loads into the other.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::engines {

// Parameter-sized temporaries of an optimizer step: `slots` of them per
// parameter, views of one buffer that grows to the largest need and stays.
class StepScratch {
 public:
  // Slot `slot` shaped like `like`: valid until the next call with a larger
  // parameter (the first step only).
  torch::Tensor slot(const torch::Tensor& like, int slot);
  // Elements held (for tests: it stops growing after the first step).
  std::int64_t capacity() const { return buffer_.defined() ? buffer_.numel() : 0; }

 private:
  static constexpr int kSlots = 2;
  torch::Tensor buffer_;
  std::int64_t per_slot_ = 0;
};

// An optimizer that can update some of its parameters at a time. Each
// parameter's update reads only its own gradient, state and options, so
// updating the parameters part by part — as their mean gradients arrive
// from the exchange — gives the same bits as one step() over all of them.
class PartwiseOptimizer {
 public:
  virtual ~PartwiseOptimizer() = default;
  // Updates each of `parameters` (tensors of this optimizer's groups) that
  // has a gradient, with its group's options, as step() would. Throws
  // InvalidArgument for a tensor the optimizer does not hold.
  virtual void step_parameters(std::span<const torch::Tensor> parameters) = 0;
};

// libtorch's optimizer `Libtorch` (SGD, Adam or AdamW: its options, state
// and checkpoints) with its step computed in place, as above.
template <class Libtorch>
class InPlace final : public Libtorch, public PartwiseOptimizer {
 public:
  using Libtorch::Libtorch;
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
  void step_parameters(std::span<const torch::Tensor> parameters) override;

 private:
  // One parameter's update from its (defined) gradient.
  void update(torch::Tensor& p, const torch::optim::OptimizerOptions& options);
  // The group holding `p` (the index is rebuilt when groups change).
  torch::optim::OptimizerParamGroup& group_of(const torch::Tensor& p);

  StepScratch scratch_;
  std::unordered_map<const void*, std::size_t> group_index_;
  std::size_t indexed_parameters_ = 0;
};

using InPlaceSGD = InPlace<torch::optim::SGD>;
using InPlaceAdam = InPlace<torch::optim::Adam>;
using InPlaceAdamW = InPlace<torch::optim::AdamW>;
// Each optimizer's own update (optimizers.cc).
template <>
void InPlaceSGD::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options);
template <>
void InPlaceAdam::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options);
template <>
void InPlaceAdamW::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options);
extern template class InPlace<torch::optim::SGD>;
extern template class InPlace<torch::optim::Adam>;
extern template class InPlace<torch::optim::AdamW>;

}  // namespace qccl::engines
QCCL_API_END
