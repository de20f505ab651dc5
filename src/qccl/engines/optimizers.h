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

#include <memory>
#include <vector>

#include "qccl/engines/train_config.h"

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

class InPlaceSGD final : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
  const StepScratch& scratch() const { return scratch_; }

 private:
  StepScratch scratch_;
};

class InPlaceAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
  const StepScratch& scratch() const { return scratch_; }

 private:
  StepScratch scratch_;
};

class InPlaceAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
  const StepScratch& scratch() const { return scratch_; }

 private:
  StepScratch scratch_;
};

// The optimizer `config` names (sgd, adam, adamw) with its settings.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& config,
                                                        std::vector<torch::Tensor> parameters);

}  // namespace qccl::engines
