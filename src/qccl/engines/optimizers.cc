#include "qccl/engines/optimizers.h"

#include <cmath>
#include <optional>
#include <type_traits>
#include <string>
#include <utility>

#include "qccl/common/errors.h"
#include "qccl/engines/adam_kernel.h"
#include "qccl/engines/row_updates.h"

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

std::int64_t rows_of(const torch::Tensor& p) { return p.dim() == 0 ? 1 : p.size(0); }

// The rows of a sparse gradient: coalesced (duplicates summed), one sparse
// dimension, fp32 CPU values.
torch::Tensor coalesced_rows(const torch::Tensor& p, const char* optimizer) {
  const auto& grad = p.grad();
  if (grad.sparse_dim() != 1 || grad.sizes() != p.sizes() || grad.scalar_type() != torch::kFloat ||
      !grad.device().is_cpu()) {
    throw InvalidArgument(std::string(optimizer) + ": a sparse gradient of " +
                          std::to_string(grad.sparse_dim()) + " sparse dimensions for a parameter of " +
                          std::to_string(p.dim()) + "; rows (one sparse dimension, fp32, the "
                          "parameter's shape) are what it takes");
  }
  return grad.is_coalesced() ? grad : grad.coalesce();
}

// The gradient as a dense tensor: itself, or rows written into scratch
// slot 2 (zero elsewhere): the same values a dense gradient would hold.
torch::Tensor dense_gradient(const torch::Tensor& p, StepScratch& scratch, const char* optimizer) {
  const auto& grad = p.grad();
  if (!grad.is_sparse()) return grad;
  const auto rows = coalesced_rows(p, optimizer);
  auto dense = scratch.slot(p, 2);
  dense.zero_();
  dense.index_copy_(0, rows._indices()[0], rows._values());
  return dense;
}

// The rows of p's gradient for the row kernels (`keep` holds the tensors).
GradientRows gradient_rows(const torch::Tensor& p, const char* optimizer, torch::Tensor& keep) {
  keep = coalesced_rows(p, optimizer);
  const auto& indices = keep._indices();
  const auto& values = keep._values();
  if (!indices.is_contiguous() || !values.is_contiguous()) {
    keep = torch::_sparse_coo_tensor_unsafe(indices.contiguous(), values.contiguous(), keep.sizes())
               ._coalesced_(true);
  }
  const std::int64_t* rows = keep._indices().data_ptr<std::int64_t>();
  const std::int64_t table_rows = rows_of(p);
  for (std::int64_t k = 0; k < keep._nnz(); ++k) {
    if (rows[k] < 0 || rows[k] >= table_rows) {  // the row kernels index memory with them
      throw InvalidArgument(std::string(optimizer) + ": a gradient row " + std::to_string(rows[k]) +
                            " of a parameter of " + std::to_string(table_rows) + " rows");
    }
  }
  return {rows, static_cast<std::size_t>(keep._nnz()),
          static_cast<std::size_t>(p.numel() / std::max<std::int64_t>(table_rows, 1)),
          keep._values().data_ptr<float>()};
}

// a + α·b written into `out` (a scratch slot), as a.add(b, α) computes it.
torch::Tensor add_into(torch::Tensor out, const torch::Tensor& a, const torch::Tensor& b,
                       double alpha) {
  torch::add_out(out, a, b, alpha);
  return out;
}

// Adam's state of p: its moments (libtorch's), or for row-wise Adagrad one
// accumulator per row in exp_avg_sq (exp_avg empty), so that checkpoints
// keep libtorch's format. A state of the other kind (a checkpoint of a run
// with another row update) is refused rather than misread.
template <class State, class Options>
State& adam_state(StateMap& states, const torch::Tensor& p, const Options& options, RowUpdate rows,
                  const char* optimizer) {
  const bool adagrad = rows == RowUpdate::rowwise_adagrad;
  auto key = state_key(p);
  auto found = states.find(key);
  if (found == states.end()) {
    auto state = std::make_unique<State>();
    state->step(0);
    if (adagrad) {
      state->exp_avg(torch::empty({0}, p.options()));
      state->exp_avg_sq(torch::zeros({rows_of(p)}, p.options()));
    } else {
      state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      if (options.amsgrad()) {
        state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      }
    }
    found = states.emplace(std::move(key), std::move(state)).first;
  }
  auto& state = static_cast<State&>(*found->second);
  const std::int64_t expected = adagrad ? rows_of(p) : p.numel();
  if (state.exp_avg_sq().numel() != expected) {
    throw InvalidArgument(std::string(optimizer) + ": the state of a parameter of " +
                          std::to_string(p.numel()) + " elements holds " +
                          std::to_string(state.exp_avg_sq().numel()) + " second moments, not " +
                          std::to_string(expected) + " (" + name_of(rows) +
                          "): it was written with another row update; resume with the settings "
                          "the checkpoint was written with");
  }
  return state;
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

// Lazy Adam (row_updates.h) on the rows of p's gradient: the one-pass
// kernel row by row, or else libtorch's operations on the rows gathered and
// written back — Adam restricted to those rows either way.
template <class State, class Options>
void lazy_adam_update(torch::Tensor& p, State& state, const Options& options, double l2_decay,
                      double decoupled_decay, StepScratch& scratch, const char* optimizer) {
  state.step(state.step() + 1);
  const double factor = decoupled_decay != 0 ? 1 - options.lr() * decoupled_decay : 1.0;
  torch::Tensor held;
  const GradientRows rows = gradient_rows(p, optimizer, held);
  const auto rounding = one_pass_adam_rounding();
  const bool amsgrad = options.amsgrad();
  if (rounding && dense_float_like(p, p) && dense_float_like(state.exp_avg(), p) &&
      dense_float_like(state.exp_avg_sq(), p) && (!amsgrad || dense_float_like(state.max_exp_avg_sq(), p))) {
    lazy_adam_rows({p.data_ptr<float>(), nullptr, state.exp_avg().template data_ptr<float>(),
                    state.exp_avg_sq().template data_ptr<float>(),
                    amsgrad ? state.max_exp_avg_sq().template data_ptr<float>() : nullptr,
                    static_cast<std::size_t>(p.numel())},
                   rows, adam_coefficients(state, options, l2_decay, factor), *rounding);
    return;
  }
  const auto index = held._indices()[0];
  auto p_rows = p.index_select(0, index);
  State rows_state;
  rows_state.step(state.step());
  rows_state.exp_avg(state.exp_avg().index_select(0, index));
  rows_state.exp_avg_sq(state.exp_avg_sq().index_select(0, index));
  if (amsgrad) rows_state.max_exp_avg_sq(state.max_exp_avg_sq().index_select(0, index));
  if (decoupled_decay != 0) p_rows.mul_(factor);
  torch::Tensor gradient = held._values();
  if (l2_decay != 0) gradient = gradient.add(p_rows, l2_decay);
  adam_operations(p_rows, gradient, rows_state, options, scratch);
  p.index_copy_(0, index, p_rows);
  state.exp_avg().index_copy_(0, index, rows_state.exp_avg());
  state.exp_avg_sq().index_copy_(0, index, rows_state.exp_avg_sq());
  if (amsgrad) state.max_exp_avg_sq().index_copy_(0, index, rows_state.max_exp_avg_sq());
}

// Row-wise Adagrad (row_updates.h) on the rows of p's gradient, or on every
// row of a dense one; the accumulators live in the state's exp_avg_sq.
template <class State, class Options>
void rowwise_adagrad_update(torch::Tensor& p, State& state, const Options& options, double decay,
                            const char* optimizer) {
  if (decay != 0) {
    throw InvalidArgument(std::string(optimizer) + ": row-wise Adagrad takes no weight decay (" +
                          std::to_string(decay) + "); set the table group's weight_decay to 0");
  }
  if (!dense_float_like(p, p)) {
    throw InvalidArgument(std::string(optimizer) + ": row-wise Adagrad updates contiguous fp32 CPU tensors");
  }
  state.step(state.step() + 1);
  torch::Tensor held;
  GradientRows rows;
  if (p.grad().is_sparse()) {
    rows = gradient_rows(p, optimizer, held);
  } else {
    held = p.grad().contiguous();
    const auto n = static_cast<std::size_t>(rows_of(p));
    rows = {nullptr, n, static_cast<std::size_t>(p.numel()) / std::max<std::size_t>(n, 1),
            held.data_ptr<float>()};
  }
  rowwise_adagrad_rows(p.data_ptr<float>(), state.exp_avg_sq().template data_ptr<float>(), rows,
                       static_cast<float>(options.lr()), static_cast<float>(options.eps()));
}

// Adam or AdamW on p by its group's row update: row-wise Adagrad on any
// gradient, lazy Adam on rows, else Adam on the dense gradient.
template <class State, class Options>
void adam_family_update(torch::Tensor& p, State& state, const Options& options, double l2_decay,
                        double decoupled_decay, RowUpdate rows, StepScratch& scratch,
                        const char* optimizer) {
  if (rows == RowUpdate::rowwise_adagrad) {
    rowwise_adagrad_update(p, state, options, l2_decay + decoupled_decay, optimizer);
  } else if (rows == RowUpdate::lazy_adam && p.grad().is_sparse()) {
    lazy_adam_update(p, state, options, l2_decay, decoupled_decay, scratch, optimizer);
  } else {
    adam_update(p, dense_gradient(p, scratch, optimizer), state, options, l2_decay, decoupled_decay,
                scratch);
  }
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

const GroupRule& GroupRules::group_rule(std::size_t group) const {
  static const GroupRule kDense;
  return group < rules_.size() ? rules_[group] : kDense;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  const auto* rules = dynamic_cast<const GroupRules*>(&optimizer);
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].options().set_lr(lr * (rules ? rules->group_rule(g).lr_factor : 1.0));
  }
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
void InPlaceSGD::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given, RowUpdate) {
  const auto& options = static_cast<const torch::optim::SGDOptions&>(given);
  torch::Tensor d_p = dense_gradient(p, scratch_, "SGD");
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
void InPlaceAdam::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given, RowUpdate rows) {
  const auto& options = static_cast<const torch::optim::AdamOptions&>(given);
  auto& state = adam_state<torch::optim::AdamParamState>(state_, p, options, rows, "Adam");
  adam_family_update(p, state, options, options.weight_decay(), 0.0, rows, scratch_, "Adam");
}

// AdamW (Loshchilov & Hutter): the decay shrinks the parameter first,
// p ← p·(1 − lr·λ), decoupled from the gradient.
template <>
void InPlaceAdamW::update(torch::Tensor& p, const torch::optim::OptimizerOptions& given, RowUpdate rows) {
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(given);
  auto& state = adam_state<torch::optim::AdamWParamState>(state_, p, options, rows, "AdamW");
  adam_family_update(p, state, options, 0.0, options.weight_decay(), rows, scratch_, "AdamW");
}

// libtorch's loop: the closure with gradients on, then every parameter of
// every group that has a gradient, with its group's options.
template <class Libtorch>
torch::Tensor InPlace<Libtorch>::step(torch::optim::Optimizer::LossClosure closure) {
  torch::NoGradGuard no_grad;
  auto loss = evaluate(closure);
  for (std::size_t g = 0; g < this->param_groups_.size(); ++g) {
    auto& group = this->param_groups_[g];
    for (auto& p : group.params()) {
      if (p.grad().defined()) update(p, group.options(), group_rule(g).rows);
    }
  }
  return loss;
}

template <class Libtorch>
void InPlace<Libtorch>::set_group_rule(std::size_t group, GroupRule rule) {
  const auto groups = this->param_groups_.size();
  if (group >= groups) {
    throw InvalidArgument("optimizer: group " + std::to_string(group) + " of " +
                          std::to_string(groups) + "; add the group before setting its rule");
  }
  if (!(rule.lr_factor > 0) || !std::isfinite(rule.lr_factor)) {
    throw InvalidArgument("optimizer: a learning-rate factor of " + std::to_string(rule.lr_factor) +
                          "; it must be positive and finite");
  }
  if constexpr (std::is_same_v<Libtorch, torch::optim::SGD>) {
    if (rule.rows != RowUpdate::dense) {
      throw InvalidArgument("SGD: the row update " + name_of(rule.rows) +
                            " is Adam's and AdamW's; SGD takes rows as the dense gradient");
    }
  } else {
    const auto& options = this->param_groups_[group].options();
    using Options = std::conditional_t<std::is_same_v<Libtorch, torch::optim::Adam>,
                                       torch::optim::AdamOptions, torch::optim::AdamWOptions>;
    const double decay = static_cast<const Options&>(options).weight_decay();
    if (rule.rows == RowUpdate::rowwise_adagrad && decay != 0) {
      throw InvalidArgument("optimizer: row-wise Adagrad takes no weight decay; group " +
                            std::to_string(group) + " has weight_decay " + std::to_string(decay));
    }
  }
  if (rules_.size() < groups) rules_.resize(groups);
  rules_[group] = rule;
}

template <class Libtorch>
std::size_t InPlace<Libtorch>::group_of(const torch::Tensor& p) {
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
  return found->second;
}

// The same updates as step(), for some parameters, in the order given.
template <class Libtorch>
void InPlace<Libtorch>::step_parameters(std::span<const torch::Tensor> parameters) {
  torch::NoGradGuard no_grad;
  for (const auto& given : parameters) {
    const std::size_t g = group_of(given);
    torch::Tensor p = given;  // shares the parameter's storage and .grad
    if (p.grad().defined()) update(p, this->param_groups_[g].options(), group_rule(g).rows);
  }
}

template class InPlace<torch::optim::SGD>;
template class InPlace<torch::optim::Adam>;
template class InPlace<torch::optim::AdamW>;

}  // namespace qccl::engines
