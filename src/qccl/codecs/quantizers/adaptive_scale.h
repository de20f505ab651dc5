// The scale α of IntSGD's integer rounding Q(x) = Int(α·x)/α, one per tensor
// (IntSGD Algorithm 2's blocks R^d = R^d1 × … × R^dB are the tensors of a
// codec's layout).
#pragma once

#include <cstddef>
#include <span>

namespace qccl {

// The adaptive rule of IntSGD (Proposition 2; Algorithm 2 for blocks): with
// r_{k,l} = β·r_{k−1,l} + (1 − β)·‖(x_k − x_{k−1})_l‖², r_0 = 0 (the sum in
// the proof of Proposition 2 starts at the first update),
//   α_{k,l} = η_k·√d_l / √(2n·r_{k,l} + η_k²·d_l·ε²).
// Every rank holds identical iterates, so every rank computes identical α
// without communicating. β = 0, ε = 0 is Proposition 3/4's rule
// α = η√d_l / (√(2n)·‖(x_k − x_{k−1})_l‖), which IntDIANA uses (Algorithm 3).
// A zero denominator (ε = 0 and no movement) gives α = +inf.
//
// A tensor's state is three values, [observed, r, η of its next step]: it
// lives with the tensor (TensorStateStore), so it follows the tensor across
// bucket layouts.
class AdaptiveScale {
 public:
  static constexpr std::size_t kStateValues = 3;

  // Throws InvalidArgument unless 0 <= beta < 1 and epsilon >= 0 is finite.
  AdaptiveScale(double beta, double epsilon);

  // After an optimizer step: folds the squared norm of a tensor's update
  // into its state, with the step size `eta` its next step is applied with.
  // Throws InvalidArgument for a non-finite norm or a bad step size.
  void observe(std::span<double> state, double squared_norm, double eta) const;
  // Whether the tensor has been observed (before that, its step is exact, §4.1).
  static bool observed(std::span<const double> state) { return state[0] != 0.0; }
  // α for a tensor of `size` elements on `ranks` ranks.
  double alpha(std::span<const double> state, std::size_t size, int ranks) const;

 private:
  double beta_, epsilon_;
};

// Throws InvalidArgument unless `eta` is a positive, finite step size.
void check_step_size(double eta);

}  // namespace qccl
