// Deep Gradient Compression's choice of what to send (Lin, Han, Mao, Wang
// and Dally 2018, "Deep Gradient Compression": gradient sparsification,
// warm-up training and the sampled threshold): the density of each step under warm-up, and the
// positions of one tensor's accumulated gradient v whose |v| passes a
// threshold estimated from a sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qccl/common/counter_rng.h"

namespace qccl {

// The fraction of elements sent at `step` (DGC's warm-up training, "exponentially
// increase the gradient sparsity from a relatively small value to the final
// value": 75%, 93.75%, 98.4375%, 99.6%, ...). Warm-up runs the densities
// 4^-1, 4^-2, ..., 4^-J — every power of 1/4 above `ratio` — in J equal
// stages over the first `warmup` steps: step s < warmup uses
// 4^-(⌊s·J/warmup⌋ + 1); from step `warmup` on (and with warmup 0, or no
// power above ratio) the density is `ratio`. E.g. ratio 0.001 over 400
// steps: 0.25 for steps 0-99, 0.0625, 0.015625, 0.00390625 for 300-399,
// then 0.001 — the paper's 75%, 93.75%, 98.4375%, 99.6%, then 99.9%.
double dgc_density(double ratio, std::uint64_t warmup, std::uint64_t step);

// The adjustment, for a target of k elements: the selected count may end
// anywhere in [0.7·k, 1.3·k]; at most kDgcMaxAdjustments rounds.
inline constexpr double kDgcRaise = 1.3;
inline constexpr double kDgcLower = 0.7;
inline constexpr int kDgcMaxAdjustments = 10;
// The most a tensor with target k sends: max(k, ⌊1.3·k⌋).
std::size_t dgc_max_selected(std::size_t k);

// Elements sampled from a tensor of d elements to estimate the threshold
// for a target of k: ⌈sample·d⌉, but at least ⌈8·d/k⌉ so that the sample's
// share of the target, k·S/d, is at least 8 elements (a top-1 of a handful
// of samples says little), and at most d.
std::size_t dgc_sample_size(std::size_t d, std::size_t k, double sample);

struct ThresholdOutcome {
  double threshold = 0;       // the final τ
  std::size_t count = 0;      // #{j : |v_j| >= τ}
  int adjustments = 0;        // rounds that changed τ
};

// The threshold adjustment: count = #{j : |v_j| >= τ}; while count > 1.3·k
// raise τ ← 1.3·τ, while count < 0.7·k lower τ ← 0.7·τ, re-counting after
// each change, at most kDgcMaxAdjustments times; stop as soon as the count
// lies in [0.7·k, 1.3·k].
ThresholdOutcome adjust_threshold(std::span<const float> v, double initial, std::size_t k);

// Appends offset + j, increasing, for the positions of v this tensor sends
// with target k:
// 1. estimate: sample S = dgc_sample_size positions uniformly with
//    replacement (draw i is uniform_below(rng, i, d); all of v when S = d)
//    and take τ = the ⌈k·S/d⌉-th largest sampled |v| (the k-th largest
//    scaled to the sample);
// 2. adjust_threshold;
// 3. send every |v_j| >= τ when the count converged into [0.7·k, 1.3·k];
//    otherwise — τ is 0 (most of the sample was 0, which no factor moves),
//    fewer than 0.7·k elements are non-zero, or the rounds ran out (the
//    count jumping across the interval at a gap in |v|) — send the exact k
//    largest instead (select_largest).
// So a tensor sends between ⌈0.7·k⌉ and dgc_max_selected(k) positions.
void select_by_threshold(std::span<const float> v, std::size_t k, double sample,
                         const CounterRng& rng, std::size_t offset,
                         std::vector<std::size_t>& selected, std::vector<float>& scratch,
                         std::vector<std::uint32_t>& magnitude_scratch);

}  // namespace qccl
