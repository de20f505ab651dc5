#include "qccl/engines/optimizers.h"

#include <cmath>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::engines {
namespace {

using StateMap = ska::flat_hash_map<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>;

// libtorch keys a parameter's state by its TensorImpl's address, written out.
std::string state_key(const torch::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}

// What libtorch's optimizers do with a closure: evaluate it with gradients on.
torch::Tensor evaluate(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

const torch::Tensor& dense_gradient(const torch::Tensor& p, const char* optimizer) {
  const auto& grad = p.grad();
  if (grad.is_sparse()) {
    throw InvalidArgument(std::string(optimizer) + ": a sparse gradient (" +
                          std::to_string(grad.numel()) + " elements); this optimizer updates "
                          "dense gradients only: make the embedding dense (sparse=false)");
  }
  return grad;
}

// a + α·b written into `out` (a scratch slot), as a.add(b, α) computes it.
torch::Tensor add_into(torch::Tensor out, const torch::Tensor& a, const torch::Tensor& b,
                       double alpha) {
  torch::add_out(out, a, b, alpha);
  return out;
}

template <class State, class Options>
State& adam_state(StateMap& states, const torch::Tensor& p, const Options& options) {
  auto key = state_key(p);
  auto found = states.find(key);
  if (found == states.end()) {
    auto state = std::make_unique<State>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    if (options.amsgrad()) {
      state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    }
    found = states.emplace(std::move(key), std::move(state)).first;
  }
  return static_cast<State&>(*found->second);
}

// One parameter's Adam update (Kingma & Ba, Algorithm 1) in libtorch's
// order of operations:
//   m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²  (v̂ = max(v̂, v) with AMSGrad),
//   p ← p − lr/(1−β₁ᵗ) · m / (√v̂ / √(1−β₂ᵗ) + ε),
// the denominator built in scratch slot 0. `gradient` already holds any
// L2 weight decay.
template <class State, class Options>
void adam_update(torch::Tensor& p, const torch::Tensor& gradient, State& state,
                 const Options& options, StepScratch& scratch) {
  state.step(state.step() + 1);
  const auto [beta1, beta2] = options.betas();
  const double bias_correction1 = 1 - std::pow(beta1, state.step());
  const double bias_correction2 = 1 - std::pow(beta2, state.step());
  auto& exp_avg = state.exp_avg();
  auto& exp_avg_sq = state.exp_avg_sq();
  exp_avg.mul_(beta1).add_(gradient, 1 - beta1);
  exp_avg_sq.mul_(beta2).addcmul_(gradient, gradient, 1 - beta2);
  auto denom = scratch.slot(p, 0);
  if (options.amsgrad()) {
    auto& max_exp_avg_sq = state.max_exp_avg_sq();
    torch::max_out(max_exp_avg_sq, exp_avg_sq, max_exp_avg_sq);
    torch::sqrt_out(denom, max_exp_avg_sq);
  } else {
    torch::sqrt_out(denom, exp_avg_sq);
  }
  denom.div_(std::sqrt(bias_correction2)).add_(options.eps());
  p.addcdiv_(exp_avg, denom, -(options.lr() / bias_correction1));
}

}  // namespace

torch::Tensor StepScratch::slot(const torch::Tensor& like, int slot) {
  const std::int64_t n = like.numel();
  if (n > per_slot_ || !buffer_.defined() || buffer_.scalar_type() != like.scalar_type() ||
      buffer_.device() != like.device()) {
    per_slot_ = std::max(per_slot_, n);
    buffer_ = torch::empty({kSlots * per_slot_}, like.options().memory_format(torch::MemoryFormat::Contiguous));
  }
  return buffer_.narrow(0, slot * per_slot_, n).view(like.sizes());
}

// libtorch's SGD: d = g + λp; b ← μb + (1−τ)d (b = d at the first step);
// d = d + μb with Nesterov, else b; p ← p − lr·d.
template <>
void InPlaceSGD::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given) {
  const auto& options = static_cast<const torch::optim::SGDOptions&>(given);
  torch::Tensor d_p = dense_gradient(p, "SGD");
  if (options.weight_decay() != 0) {
    d_p = add_into(scratch_.slot(p, 0), d_p, p, options.weight_decay());
  }
  if (options.momentum() != 0) {
    auto key = state_key(p);
    auto found = state_.find(key);
    torch::Tensor buffer;
    if (found == state_.end()) {
      buffer = torch::clone(d_p).detach();  // the state, allocated once
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(buffer);
      state_.emplace(std::move(key), std::move(state));
    } else {
      buffer = static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer();
      buffer.mul_(options.momentum()).add_(d_p, 1 - options.dampening());
    }
    d_p = options.nesterov() ? add_into(scratch_.slot(p, 1), d_p, buffer, options.momentum())
                             : buffer;
  }
  p.add_(d_p, -1 * options.lr());
}

// Adam with L2 weight decay: the decay goes into the gradient (slot 1).
template <>
void InPlaceAdam::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given) {
  const auto& options = static_cast<const torch::optim::AdamOptions&>(given);
  torch::Tensor gradient = dense_gradient(p, "Adam");
  auto& state = adam_state<torch::optim::AdamParamState>(state_, p, options);
  if (options.weight_decay() != 0) {
    gradient = add_into(scratch_.slot(p, 1), gradient, p, options.weight_decay());
  }
  adam_update(p, gradient, state, options, scratch_);
}

// AdamW (Loshchilov & Hutter): the decay shrinks the parameter first,
// p ← p·(1 − lr·λ), decoupled from the gradient.
template <>
void InPlaceAdamW::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given) {
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(given);
  const torch::Tensor& gradient = dense_gradient(p, "AdamW");
  auto& state = adam_state<torch::optim::AdamWParamState>(state_, p, options);
  if (options.weight_decay() != 0) p.mul_(1 - options.lr() * options.weight_decay());
  adam_update(p, gradient, state, options, scratch_);
}

// libtorch's loop: the closure with gradients on, then every parameter of
// every group that has a gradient, with its group's options.
template <class Libtorch>
torch::Tensor InPlace<Libtorch>::step(torch::optim::Optimizer::LossClosure closure) {
  torch::NoGradGuard no_grad;
  auto loss = evaluate(closure);
  for (auto& group : this->param_groups_) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) update(p, group.options());
    }
  }
  return loss;
}

template <class Libtorch>
torch::optim::OptimizerParamGroup& InPlace<Libtorch>::group_of(const torch::Tensor& p) {
  std::size_t parameters = 0;
  for (const auto& group : this->param_groups_) parameters += group.params().size();
  if (parameters != indexed_parameters_) {
    group_index_.clear();
    for (std::size_t g = 0; g < this->param_groups_.size(); ++g) {
      for (const auto& q : this->param_groups_[g].params()) {
        group_index_.emplace(q.unsafeGetTensorImpl(), g);
      }
    }
    indexed_parameters_ = parameters;
  }
  const auto found = group_index_.find(p.unsafeGetTensorImpl());
  if (found == group_index_.end()) {
    throw InvalidArgument("optimizer: a tensor of " + std::to_string(p.numel()) +
                          " elements that is not one of its parameters; pass the tensors the "
                          "optimizer was built with");
  }
  return this->param_groups_[found->second];
}

// The same updates as step(), for some parameters, in the order given.
template <class Libtorch>
void InPlace<Libtorch>::step_parameters(std::span<const torch::Tensor> parameters) {
  torch::NoGradGuard no_grad;
  for (const auto& given : parameters) {
    auto& group = group_of(given);
    torch::Tensor p = given;  // shares the parameter's storage and .grad
    if (p.grad().defined()) update(p, group.options());
  }
}

template class InPlace<torch::optim::SGD>;
template class InPlace<torch::optim::Adam>;
template class InPlace<torch::optim::AdamW>;

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c,
                                                        std::vector<torch::Tensor> parameters) {
  namespace optim = torch::optim;
  if (c.optimizer == "adam") {
    return std::make_unique<InPlaceAdam>(
        parameters,
        optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  if (c.optimizer == "adamw") {
    return std::make_unique<InPlaceAdamW>(
        parameters,
        optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  if (c.optimizer == "sgd") {
    return std::make_unique<InPlaceSGD>(
        parameters, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  throw InvalidArgument("unknown optimizer '" + c.optimizer + "'; valid: sgd, adam, adamw");
}

}  // namespace qccl::engines
