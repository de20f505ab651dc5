// The scale α of IntSGD's integer rounding Q(x) = Int(α·x)/α, one per block
// of coordinates, and the partition into blocks it is kept on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace qccl {

// Consecutive blocks covering a vector (IntSGD Algorithm 2's partition
// R^d = R^d1 × … × R^dB): one block per layer of a bucket, say. The default
// is a single block of whatever length the vector has.
class BlockPartition {
 public:
  BlockPartition() = default;
  // Throws InvalidArgument for an empty list or a zero-sized block.
  explicit BlockPartition(std::span<const std::size_t> sizes);

  // Throws InvalidArgument unless the blocks add up to `length`.
  void check(std::size_t length, std::string_view what) const;
  std::size_t count() const { return sizes_.empty() ? 1 : sizes_.size(); }
  // Block l of a vector of `length` elements, as [first, first + size).
  std::size_t first(std::size_t l) const { return sizes_.empty() ? 0 : starts_[l]; }
  std::size_t size(std::size_t l, std::size_t length) const {
    return sizes_.empty() ? length : sizes_[l];
  }
  // First elements of every block, for a vector of `length` elements.
  std::vector<std::size_t> starts() const;

 private:
  std::vector<std::size_t> sizes_, starts_;
};

// The adaptive rule of IntSGD (Proposition 2; Algorithm 2 for blocks): with
// r_{k,l} = β·r_{k−1,l} + (1 − β)·‖(x_k − x_{k−1})_l‖², r_0 = 0 (the sum in
// the proof of Proposition 2 starts at the first update),
//   α_{k,l} = η_k·√d_l / √(2n·r_{k,l} + η_k²·d_l·ε²).
// Every rank holds identical iterates, so every rank computes identical α
// without communicating. β = 0, ε = 0 is Proposition 3/4's rule
// α = η√d_l / (√(2n)·‖(x_k − x_{k−1})_l‖), which IntDIANA uses (Algorithm 3).
// A zero denominator (ε = 0 and no movement) gives α = +inf.
class AdaptiveScale {
 public:
  AdaptiveScale(double beta, double epsilon);

  // After an optimizer step: the step size of the next step and the squared
  // norm of each block's update. Throws InvalidArgument for a step size that
  // is not positive and finite, non-finite norms, or a block count that
  // changed.
  void observe(double next_step_size, std::span<const double> block_squared_norms);
  // False until the first observe(): the step before it is exact (§4.1).
  bool ready() const { return ready_; }
  double alpha(std::size_t block, std::size_t block_size, int ranks) const;
  std::size_t block_count() const { return moving_average_.size(); }

  // [ready, η, r_1..r_B] for checkpoints.
  std::vector<double> state() const;
  void restore(std::span<const double> state);

 private:
  double beta_, epsilon_;
  bool ready_ = false;
  double step_size_ = 0;
  std::vector<double> moving_average_;
};

}  // namespace qccl
