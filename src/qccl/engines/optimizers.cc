#include "qccl/engines/optimizers.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "qccl/common/errors.h"
#include "qccl/engines/adam_kernel.h"

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

// 1 − β₁ᵗ and 1 − β₂ᵗ at the state's step, in double as libtorch has them.
template <class State, class Options>
std::pair<double, double> bias_corrections(const State& state, const Options& options) {
  const auto [beta1, beta2] = options.betas();
  return {1 - std::pow(beta1, state.step()), 1 - std::pow(beta2, state.step())};
}

// One parameter's Adam update (Kingma & Ba, Algorithm 1) as libtorch's
// tensor operations, in its order:
//   m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²  (v̂ = max(v̂, v) with AMSGrad),
//   p ← p − lr/(1−β₁ᵗ) · m / (√v̂ / √(1−β₂ᵗ) + ε),
// the denominator built in scratch slot 0. `gradient` already holds any
// L2 weight decay. The step count is the caller's to advance.
template <class State, class Options>
void adam_operations(torch::Tensor& p, const torch::Tensor& gradient, State& state,
                     const Options& options, StepScratch& scratch) {
  const auto [beta1, beta2] = options.betas();
  const auto [bias_correction1, bias_correction2] = bias_corrections(state, options);
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

// The step's scalars as libtorch's kernels see them: each computed in
// double, then rounded to float.
template <class State, class Options>
AdamCoefficients adam_coefficients(const State& state, const Options& options, double l2_decay,
                                   double decoupled_factor) {
  const auto [beta1, beta2] = options.betas();
  const auto [bias_correction1, bias_correction2] = bias_corrections(state, options);
  AdamCoefficients c;
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1 - beta2);
  c.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
  c.eps = static_cast<float>(options.eps());
  c.step_size = static_cast<float>(-(options.lr() / bias_correction1));
  c.l2_decay = static_cast<float>(l2_decay);
  c.decoupled_factor = static_cast<float>(decoupled_factor);
  return c;
}

// Whether `t` is a contiguous float32 CPU tensor of p's size.
bool dense_float_like(const torch::Tensor& t, const torch::Tensor& p) {
  return t.defined() && t.scalar_type() == torch::kFloat && t.device().is_cpu() && t.is_contiguous() &&
         t.numel() == p.numel();
}

// Whether the one-pass kernel can update `p`: float32 CPU tensors, all
// contiguous and of one size, the gradient not sharing the parameter's or
// the moments' storage.
template <class State>
bool single_pass_applies(const torch::Tensor& p, const torch::Tensor& grad, const State& state,
                         bool amsgrad) {
  if (!dense_float_like(p, p) || !dense_float_like(grad, p) || !dense_float_like(state.exp_avg(), p) ||
      !dense_float_like(state.exp_avg_sq(), p)) {
    return false;
  }
  if (amsgrad && !dense_float_like(state.max_exp_avg_sq(), p)) return false;
  const auto* g = grad.data_ptr<float>();
  for (const auto* other : {p.data_ptr<float>(), state.exp_avg().template data_ptr<float>(),
                            state.exp_avg_sq().template data_ptr<float>()}) {
    if (g < other + p.numel() && other < g + p.numel()) return false;
  }
  return true;
}

// The one-pass update of `p` from its raw gradient, the range split across
// libtorch's intra-op threads as its own operations would be (elements are
// independent, so the split does not change the bits).
template <class State>
void adam_single_pass(torch::Tensor& p, const torch::Tensor& grad, State& state, bool amsgrad,
                      const AdamCoefficients& c, AdamRounding rounding) {
  float* param = p.data_ptr<float>();
  const float* gradient = grad.data_ptr<float>();
  float* exp_avg = state.exp_avg().template data_ptr<float>();
  float* exp_avg_sq = state.exp_avg_sq().template data_ptr<float>();
  float* max_exp_avg_sq = amsgrad ? state.max_exp_avg_sq().template data_ptr<float>() : nullptr;
  at::parallel_for(0, p.numel(), at::internal::GRAIN_SIZE, [&](std::int64_t begin, std::int64_t end) {
    const auto at = static_cast<std::size_t>(begin);
    adam_update_arrays({param + at, gradient + at, exp_avg + at, exp_avg_sq + at,
                        max_exp_avg_sq ? max_exp_avg_sq + at : nullptr,
                        static_cast<std::size_t>(end - begin)},
                       c, rounding);
  });
}

// A step of Adam (L2 decay λ) or AdamW (decoupled decay λ): in one pass
// when the tensors allow it and the one-pass rounding of libtorch's is
// known, else as libtorch's operations.
template <class State, class Options>
void adam_update(torch::Tensor& p, const torch::Tensor& grad, State& state, const Options& options,
                 double l2_decay, double decoupled_decay, StepScratch& scratch) {
  state.step(state.step() + 1);
  const auto rounding = one_pass_adam_rounding();
  if (rounding && single_pass_applies(p, grad, state, options.amsgrad())) {
    const double factor = decoupled_decay != 0 ? 1 - options.lr() * decoupled_decay : 1.0;
    adam_single_pass(p, grad, state, options.amsgrad(),
                     adam_coefficients(state, options, l2_decay, factor), *rounding);
    return;
  }
  if (decoupled_decay != 0) p.mul_(1 - options.lr() * decoupled_decay);
  torch::Tensor gradient = grad;
  if (l2_decay != 0) gradient = add_into(scratch.slot(p, 1), grad, p, l2_decay);
  adam_operations(p, gradient, state, options, scratch);
}

// Values for the rounding probe: element i of a probe array.
torch::Tensor probe_values(std::int64_t n, double frequency, double scale) {
  return torch::sin(torch::arange(n, torch::kDouble) * frequency).to(torch::kFloat) *
         static_cast<float>(scale);
}

// Whether the one-pass kernel with `rounding` gives libtorch's bits: three
// steps of AMSGrad Adam with L2 decay (every operation of the update) on an
// array whose length is no multiple of any vector width, gradients of
// three magnitudes, both ways from the same start.
bool rounding_reproduces_libtorch(AdamRounding rounding) {
  constexpr std::int64_t kProbe = 4099;
  const auto options = torch::optim::AdamOptions(0.01).betas({0.87, 0.993}).eps(1e-7).amsgrad(true);
  const double l2 = 0.03;
  auto start = probe_values(kProbe, 0.77, 1.0);
  torch::Tensor p_ref = start.clone(), p_one = start.clone();
  torch::optim::AdamParamState ref, one;
  for (auto* s : {&ref, &one}) {
    s->step(0);
    s->exp_avg(torch::zeros({kProbe}));
    s->exp_avg_sq(torch::zeros({kProbe}));
    s->max_exp_avg_sq(torch::zeros({kProbe}));
  }
  StepScratch scratch;
  for (int step = 0; step < 3; ++step) {
    const auto grad = probe_values(kProbe, 0.31 * (step + 1), std::pow(10.0, 2 * step - 2));
    ref.step(ref.step() + 1);
    one.step(one.step() + 1);
    adam_operations(p_ref, add_into(scratch.slot(p_ref, 1), grad, p_ref, l2), ref, options, scratch);
    adam_single_pass(p_one, grad, one, true, adam_coefficients(one, options, l2, 1.0), rounding);
    if (!torch::equal(p_ref, p_one) || !torch::equal(ref.exp_avg(), one.exp_avg()) ||
        !torch::equal(ref.exp_avg_sq(), one.exp_avg_sq()) ||
        !torch::equal(ref.max_exp_avg_sq(), one.max_exp_avg_sq())) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<AdamRounding> one_pass_adam_rounding() {
  static const std::optional<AdamRounding> found = [] {
    torch::NoGradGuard no_grad;
    for (const auto rounding : {AdamRounding{true, true}, AdamRounding{false, false},
                                AdamRounding{true, false}, AdamRounding{false, true}}) {
      if (rounding_reproduces_libtorch(rounding)) return std::optional<AdamRounding>(rounding);
    }
    return std::optional<AdamRounding>();
  }();
  return found;
}

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
  const torch::Tensor& gradient = dense_gradient(p, "Adam");
  auto& state = adam_state<torch::optim::AdamParamState>(state_, p, options);
  adam_update(p, gradient, state, options, options.weight_decay(), 0.0, scratch_);
}

// AdamW (Loshchilov & Hutter): the decay shrinks the parameter first,
// p ← p·(1 − lr·λ), decoupled from the gradient.
template <>
void InPlaceAdamW::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given) {
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(given);
  const torch::Tensor& gradient = dense_gradient(p, "AdamW");
  auto& state = adam_state<torch::optim::AdamWParamState>(state_, p, options);
  adam_update(p, gradient, state, options, 0.0, options.weight_decay(), scratch_);
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

}  // namespace qccl::engines
