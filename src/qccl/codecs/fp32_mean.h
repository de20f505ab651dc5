// Means of fp32 values summed in transit that cannot overflow.
//
// n values of magnitude at most M sum beyond fp32's range (FLT_MAX, about
// 3.4e38) only when n·M does. While n·M <= FLT_MAX/2 (every input a
// training step is likely to see) the values travel as they are and the
// sum is divided by n afterwards: the results are those this library has
// always given. Above it, every rank multiplies its values by 2^-k, with
// 2^k the smallest power of two >= n, before they travel: a power of two,
// so exact for every value not below 2^(k-126), and every partial sum then
// stays within M. The decoded sum times 2^k/n, computed in double and
// rounded once, is the mean. Every rank takes the same branch: M is the
// step's global norm.
#pragma once

#include <algorithm>
#include <cfloat>
#include <memory>
#include <span>

#include "qccl/collectives/reduction.h"

namespace qccl {

class SumScaling {
 public:
  SumScaling() = default;
  // The scaling for a sum over `summed` ranks of values of magnitude at
  // most `bound`.
  static SumScaling for_sum(double bound, int summed);

  // Whether values travel scaled (and decode to the mean).
  bool active() const { return shift_ > 0; }
  // x as it travels.
  float encode(float x) const { return active() ? x * down_ : x; }
  // A decoded sum of scaled values as the mean over the ranks (within
  // fp32's range: rounding may carry a mean of values at FLT_MAX just past it).
  float mean(float sum) const {
    const double m = static_cast<double>(sum) * to_mean_;
    return static_cast<float>(std::clamp(m, -double{FLT_MAX}, double{FLT_MAX}));
  }
  // One rank's travelling value as the value it stands for.
  float contribution(float v) const { return active() ? v * up_ : v; }
  // Its element form (collectives/element_form.h): x·2^-k summed, decoded
  // to the mean; without scaling, the sum over `summed` (the step's
  // completion, finish_fp32_mean, done by the decoding).
  ElementForm element_form(int summed) const;

 private:
  int shift_ = 0;
  float down_ = 1.0f, up_ = 1.0f;  // 2^-k, 2^k
  double to_mean_ = 1.0;           // 2^k / n
};

// The mean of `summed` ranks' fp32 values whose magnitudes are at most
// `norm`: the plain fp32 sum (as Fp32Sum, on the caller's buffer) or, when it
// could overflow, the scaled sum above.
std::unique_ptr<Reduction> make_fp32_mean_reduction(double norm, int summed);

// Turns what the reduction make_fp32_mean_reduction(norm, summed) built left
// in `output` into the mean: the plain sum divided by `summed`; the scaled
// one decoded to the mean already.
void finish_fp32_mean(double norm, int summed, std::span<float> output);

}  // namespace qccl
