// The levels of Q-GenX's random quantization (Definition 1): a sequence
// 0 = ℓ_0 < ℓ_1 < … < ℓ_s < ℓ_{s+1} = 1 that a coordinate normalized by its
// vector's L_q norm, u = |v_i| / ‖v‖_q in [0, 1], is rounded to at random:
// up to ℓ_{τ+1} with probability ξ = (u − ℓ_τ)/(ℓ_{τ+1} − ℓ_τ), else down to
// ℓ_τ, so E[q(u)] = u. The families, the lookup of τ(u), Eq. (3.1)'s
// variance and Theorem 1's bound on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qccl {

// An L_q norm: q >= 1, or 0 for the ∞-norm.
using NormOrder = int;
inline constexpr NormOrder kInfinityNorm = 0;

// ‖v‖_q in double, scaled by max|v| so that no power overflows.
double lq_norm(std::span<const float> v, NormOrder q);

// s interior levels evenly spaced: ℓ_j = j/(s+1) (QSGD's levels).
std::vector<double> uniform_levels(int s);
// s interior levels spaced by powers of two: 2^-s, …, 1/4, 1/2 (NUQSGD's).
std::vector<double> exponential_levels(int s);
// Throws InvalidArgument unless `levels` starts at 0, ends at 1 and increases strictly.
void check_levels(std::span<const double> levels);

// τ(u) for u in [0, 1]: the index with ℓ_τ <= u < ℓ_{τ+1}, and τ = s for
// u = 1 (which then rounds up with probability 1). A table over 4096
// equal cells of [0, 1] gives the first candidate; a short walk finishes.
class LevelIndex {
 public:
  explicit LevelIndex(std::span<const double> levels);
  std::size_t lower(double u) const {
    const auto cell = static_cast<std::size_t>(u * kCells);
    std::size_t t = start_[cell < kCells ? cell : kCells - 1];
    while (t + 2 < levels_.size() && levels_[t + 1] <= u) ++t;
    return t;
  }
  // Definition 1's random rounding of u to a level index: τ(u) + 1 with
  // probability ξ = (u − ℓ_τ)/(ℓ_{τ+1} − ℓ_τ), else τ(u), from 53 uniform
  // random bits `draw` (CounterRng::bits64 >> 11). Branch-free: the coin
  // is the sign of draw − ξ·2^53.
  std::size_t round(double u, std::uint64_t draw) const {
    const std::size_t t = lower(u);
    const auto threshold = static_cast<std::uint64_t>((u - levels_[t]) * inverse_width_[t] * 0x1p53);
    return t + static_cast<std::size_t>((draw - threshold) >> 63);
  }
  std::span<const double> levels() const { return levels_; }

 private:
  static constexpr std::size_t kCells = 4096;
  std::vector<double> levels_;
  std::vector<double> inverse_width_;  // 1/(ℓ_{j+1} − ℓ_j)
  std::vector<std::size_t> start_;
};

// σ²_Q(u; ℓ) = (ℓ_{τ+1} − u)(u − ℓ_τ), the variance of q(u) (Eq. 3.1).
double level_variance(double u, const LevelIndex& index);

// Eq. (3.1) summed over buckets: E‖Q(v) − v‖² = Σ_b ‖v_b‖_q² Σ_i σ²_Q(u_i)
// for v cut into buckets of `bucket` elements (0: one bucket).
double quantization_variance(std::span<const float> v, std::span<const double> levels,
                             std::size_t bucket, NormOrder q);

// Theorem 1's ε_Q for a vector of d coordinates normalized by its L_q norm:
// E‖Q(v) − v‖² <= ε_Q ‖v‖², with ℓ̄ = max_j ℓ_{j+1}/ℓ_j, m = min(q, 2) and
// d_th = (2/ℓ_1)^m:
//   ε_Q = (ℓ̄ + 1/ℓ̄)/4 − 1/2 + ¼ ℓ_1² d^{2/m}·1{d <= d_th} + (ℓ_1 d^{1/m} − 1)·1{d > d_th}.
double theorem1_variance_factor(std::span<const double> levels, std::size_t d, NormOrder q);

}  // namespace qccl
