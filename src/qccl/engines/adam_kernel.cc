#include "qccl/engines/adam_kernel.h"

#include <cmath>

// Built with -ffp-contract=off (no a·b+c fused unless written so) and
// -fno-math-errno (sqrt vectorizes): see src/CMakeLists.txt.
#define QCCL_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace qccl::engines {
namespace {

// a·b + c with one rounding when `Fused`, else two.
template <bool Fused>
inline float multiply_add(float a, float b, float c) {
  if constexpr (Fused) {
    return __builtin_fmaf(a, b, c);
  } else {
    return a * b + c;
  }
}

// torch.maximum: NaN when either is NaN.
inline float maximum(float a, float b) { return (a > b || a != a) ? a : b; }

// The loop for one choice of rounding and options, inlined into each
// instruction set's version of adam_update_arrays.
template <bool FusedAdd, bool FusedAddcmul, bool L2, bool AmsGrad>
__attribute__((always_inline)) inline void adam_loop(const AdamArrays& a, const AdamCoefficients& c) {
  float* __restrict p = a.param;
  const float* __restrict g = a.grad;
  float* __restrict m = a.exp_avg;
  float* __restrict v = a.exp_avg_sq;
  float* __restrict v_max = a.max_exp_avg_sq;
  for (std::size_t i = 0; i < a.count; ++i) {
    const float param = p[i] * c.decoupled_factor;
    float grad = g[i];
    if constexpr (L2) grad = multiply_add<FusedAdd>(param, c.l2_decay, grad);
    const float exp_avg = multiply_add<FusedAdd>(grad, c.one_minus_beta1, m[i] * c.beta1);
    const float exp_avg_sq = multiply_add<FusedAddcmul>(c.one_minus_beta2 * grad, grad, v[i] * c.beta2);
    m[i] = exp_avg;
    v[i] = exp_avg_sq;
    float second = exp_avg_sq;
    if constexpr (AmsGrad) {
      second = maximum(exp_avg_sq, v_max[i]);
      v_max[i] = second;
    }
    const float denominator = std::sqrt(second) / c.sqrt_bias_correction2 + c.eps;
    p[i] = param + c.step_size * exp_avg / denominator;
  }
}

template <bool FusedAdd, bool FusedAddcmul>
__attribute__((always_inline)) inline void adam_options(const AdamArrays& a, const AdamCoefficients& c) {
  const bool l2 = c.l2_decay != 0;
  if (a.max_exp_avg_sq != nullptr) {
    l2 ? adam_loop<FusedAdd, FusedAddcmul, true, true>(a, c)
       : adam_loop<FusedAdd, FusedAddcmul, false, true>(a, c);
  } else {
    l2 ? adam_loop<FusedAdd, FusedAddcmul, true, false>(a, c)
       : adam_loop<FusedAdd, FusedAddcmul, false, false>(a, c);
  }
}

}  // namespace

QCCL_MULTIVERSION void adam_update_arrays(const AdamArrays& arrays, const AdamCoefficients& c,
                                          AdamRounding rounding) {
  if (rounding.fused_add) {
    rounding.fused_addcmul ? adam_options<true, true>(arrays, c) : adam_options<true, false>(arrays, c);
  } else {
    rounding.fused_addcmul ? adam_options<false, true>(arrays, c) : adam_options<false, false>(arrays, c);
  }
}

}  // namespace qccl::engines
