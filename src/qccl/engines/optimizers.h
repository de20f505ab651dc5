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
//
// Adam and AdamW also take an embedding table's gradient as rows (a sparse
// tensor: the data-parallel engine's sparse_means), per parameter group:
// as the dense gradient it stands for (the default, the same bits as
// before), or with a row-wise update (row_updates.h) that touches only
// those rows.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "qccl/common/export.h"
#include "qccl/engines/row_update.h"

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
  static constexpr int kSlots = 3;  // 2: a gradient given as rows, made dense
  torch::Tensor buffer_;
  std::int64_t per_slot_ = 0;
};

// A parameter group's rule: how it takes rows, and its learning rate as a
// multiple of the run's (a row-wise Adagrad table usually wants a larger
// one than the Adam of the dense layers).
struct GroupRule {
  RowUpdate rows = RowUpdate::dense;
  double lr_factor = 1.0;
};

// Per-group rules of an optimizer (group index as in param_groups()).
class GroupRules {
 public:
  virtual ~GroupRules() = default;
  // InvalidArgument for a rule the optimizer cannot follow.
  virtual void set_group_rule(std::size_t group, GroupRule rule) = 0;
  // Dense, factor 1, until set.
  const GroupRule& group_rule(std::size_t group) const;

 protected:
  std::vector<GroupRule> rules_;
};

// Sets every group's learning rate to `lr` times its rule's factor (1 for
// an optimizer without rules): what the learning-rate schedule does each
// step.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

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
class InPlace final : public Libtorch, public PartwiseOptimizer, public GroupRules {
 public:
  using Libtorch::Libtorch;
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
  void step_parameters(std::span<const torch::Tensor> parameters) override;
  // Row-wise updates are Adam's and AdamW's (SGD refuses them); row-wise
  // Adagrad takes no weight decay.
  void set_group_rule(std::size_t group, GroupRule rule) override;

 private:
  // One parameter's update from its (defined) gradient, dense or rows.
  void update(torch::Tensor& p, const torch::optim::OptimizerOptions& options, RowUpdate rows);
  // The index of the group holding `p` (rebuilt when groups change).
  std::size_t group_of(const torch::Tensor& p);

  StepScratch scratch_;
  std::unordered_map<const void*, std::size_t> group_index_;
  std::size_t indexed_parameters_ = 0;
};

using InPlaceSGD = InPlace<torch::optim::SGD>;
using InPlaceAdam = InPlace<torch::optim::Adam>;
using InPlaceAdamW = InPlace<torch::optim::AdamW>;
// Each optimizer's own update (optimizers.cc).
template <>
void InPlaceSGD::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options, RowUpdate rows);
template <>
void InPlaceAdam::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options, RowUpdate rows);
template <>
void InPlaceAdamW::update(torch::Tensor& p, const torch::optim::OptimizerOptions& options, RowUpdate rows);
extern template class InPlace<torch::optim::SGD>;
extern template class InPlace<torch::optim::Adam>;
extern template class InPlace<torch::optim::AdamW>;

}  // namespace qccl::engines
QCCL_API_END
