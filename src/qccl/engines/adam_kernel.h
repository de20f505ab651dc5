// Adam's update (Kingma & Ba, Algorithm 1, with libtorch's options: L2 or
// decoupled weight decay, AMSGrad) as one pass over each element.
//
// libtorch computes it as eight tensor operations, each a pass over
// parameter-sized arrays: about twenty array reads and writes per element
// where one pass needs seven (gradient; moments and parameter read and
// written). On the recommender's 12.8 M parameters that is ~20 ms against
// ~8 ms on one core, and with 4 ranks on 2 cores the passes also contend
// for memory bandwidth (~57 ms against ~20). The bits are libtorch's: each
// element goes through the same float operations with the same roundings
// (see AdamRounding), so the parameters and moments are identical.
//
// No libtorch here: the engines call it on their tensors' storage.
#pragma once

#include <cstddef>
#include <optional>

namespace qccl::engines {

// How libtorch's CPU kernels round two of Adam's operations: whether
// m·β₁ + (1−β₁)·g (Tensor.add_ with an alpha, also Adam's L2 decay
// g + λ·p) and v·β₂ + (1−β₂)·g·g (Tensor.addcmul_) are computed with one
// rounding (a fused multiply-add) or two. Debian's libtorch 1.13 fuses
// both in its AVX2 and AVX-512 kernels and neither in its baseline ones;
// it depends on how libtorch was compiled, so the engine finds it by
// comparing with libtorch's own operations (one_pass_adam_rounding()).
struct AdamRounding {
  bool fused_add = false;
  bool fused_addcmul = false;
  friend bool operator==(const AdamRounding&, const AdamRounding&) = default;
};

// One step's scalars, each rounded to float from the double libtorch
// computes it in, as libtorch's kernels round their scalar arguments.
struct AdamCoefficients {
  float beta1 = 0, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0;
  float sqrt_bias_correction2 = 1;  // √(1−β₂ᵗ)
  float eps = 0;
  float step_size = 0;              // −lr / (1−β₁ᵗ)
  float l2_decay = 0;               // Adam's λ, added to the gradient as λ·p (0: none)
  float decoupled_factor = 1;       // AdamW's 1 − lr·λ, multiplying p first (1: none)
};

// One parameter's contiguous float arrays, `count` elements each; they
// must not overlap. `max_exp_avg_sq` is null without AMSGrad.
struct AdamArrays {
  float* param = nullptr;
  const float* grad = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  float* max_exp_avg_sq = nullptr;
  std::size_t count = 0;
};

// For each element, in libtorch's order of operations:
//   p ← p·(1 − lr·λ) (AdamW);  g ← g + λ·p (Adam's L2 decay);
//   m ← m·β₁ + (1−β₁)·g;  v ← v·β₂ + (1−β₂)·g·g;  v̂ ← max(v̂, v) (AMSGrad);
//   p ← p + (−lr/(1−β₁ᵗ))·m / (√v̂ / √(1−β₂ᵗ) + ε).
// Elements are independent: any split of the range gives the same bits.
void adam_update_arrays(const AdamArrays& arrays, const AdamCoefficients& c, AdamRounding rounding);

// The rounding with which adam_update_arrays gives the bits of this
// process's libtorch (its kernels for the instruction set it chose), found
// once by a three-step probe against libtorch's operations (optimizers.cc);
// nullopt when no rounding does, and the in-place Adam and AdamW then run
// libtorch's operations instead.
std::optional<AdamRounding> one_pass_adam_rounding();

}  // namespace qccl::engines
