// MergeComp's model partition (MergeComp §4.3): which contiguous groups of a
// model's tensors to merge, each group encoded once, exchanged and decoded
// while the rest of backward goes on.
//
// The objective is Eq. 7, F(X_y) = A + Σ h(x_i) + Σ g(x_i) − Σ p(x_i), with
// the linear costs of Assumption 5: h(x) = B_h + γ_h·x (encode + decode) and
// g(x) = B_g + γ_g·x (the collective). The overlap term p is not a formula
// here but the outcome of simulating the step as qccl runs it: group i is
// ready when the last of its tensors' gradients is (measured ready times);
// one communication thread takes the groups in order, each starting when it
// is ready and the previous group is done, and spends h + g on it; the
// training thread, once backward returns, applies the optimizer to each
// group as soon as its means arrive (or to the whole model after the last
// group, without overlap). The predicted step time is when the last update
// ends, plus the step's other time (data loading).
//
// The search is Algorithm 2: the best partition for y = 2, 3, .. Y groups,
// stopping early when y groups are worse than y − 1 or gain less than
// α·F_min(y − 1). The best partition into y groups follows Theorem 3's
// proof: the first y − 2 cuts enumerated, the last by binary search, which
// finds the optimum when F is unimodal in the last cut (the proof's case for
// y = 2); `scan` tries every last cut instead, for profiles where it is not.
#pragma once

#include <cstddef>
#include <vector>

#include "qccl/common/export.h"
#include "qccl/scheduling/bucket_plan.h"

QCCL_API_BEGIN
namespace qccl {

// Assumption 5's linear overhead of a group of x fp32 elements.
struct LinearCost {
  double fixed = 0;        // seconds per group (B)
  double per_element = 0;  // seconds per element (γ)
  double operator()(double elements) const { return fixed + per_element * elements; }
};

struct GroupCosts {
  LinearCost codec;          // h: encode and decode
  LinearCost communication;  // g: the collective's transfers and reductions
};

// One training step as the scheduler sees it. Tensors are in reverse
// registration order, the order GroupSizes counts them in (index 0 is the
// model's last tensor, whose gradient backward produces first).
struct StepProfile {
  std::vector<std::size_t> elements;  // per tensor
  std::vector<double> ready;          // s from the step's start until its gradient is ready
  double backward_end = 0;            // s from the step's start until backward returned
  double optimizer_per_element = 0;   // s of optimizer update per element
  bool overlap_updates = true;        // each group updated as soon as its means arrive
  double other = 0;                   // s of the step outside the above (data loading)
};

// Throws InvalidArgument naming the fault: no tensors, sizes of another
// length, negative or non-finite times.
void validate(const StepProfile& profile);

// F of `groups` by simulating the step (see above). Throws InvalidArgument
// when the groups do not add up to the profile's tensors (or one is empty).
// Every function here also refuses an invalid profile and costs whose B or γ
// is negative or non-finite.
double predict_step_seconds(const StepProfile& profile, const GroupCosts& costs,
                            const GroupSizes& groups);

enum class LastCutSearch { binary, scan };

struct MergeCompOptions {
  std::size_t max_groups = 2;  // Y (the paper's default)
  double alpha = 0.01;         // α: stop when a group more gains less than this share
  LastCutSearch search = LastCutSearch::binary;
};

struct MergeCompChoice {
  GroupSizes groups;
  double predicted = 0;                 // s per step
  std::vector<double> best_by_groups;   // F_min(y) for y = 1, 2, .. as far as searched
};

// Algorithm 2. Y is capped at the number of tensors. Throws InvalidArgument
// for Y = 0, α outside [0, 1), or a Y whose search would try more than
// 10^8 partitions (naming the largest Y that would not).
MergeCompChoice mergecomp_search(const StepProfile& profile, const GroupCosts& costs,
                                 const MergeCompOptions& options = {});

// The best partition into exactly `groups` groups (Theorem 3); ties keep
// the first found. Throws InvalidArgument for 0 groups, more groups than
// tensors, or a search that would try more than 10^8 partitions. `binary`
// is exact when F is, in the last cut, nonincreasing then nondecreasing
// around the proof's turning point (always so without overlapped updates or
// with optimizer_per_element = 0, for any ready times) or strictly
// decreasing to its first minimum and nondecreasing after it; `scan` always.
GroupSizes best_partition(const StepProfile& profile, const GroupCosts& costs,
                          std::size_t groups, LastCutSearch search = LastCutSearch::binary);

// The best of all 2^(N−1) partitions (Lemma 1), for checking the search;
// throws InvalidArgument beyond 24 tensors.
GroupSizes exhaustive_best_partition(const StepProfile& profile, const GroupCosts& costs);

}  // namespace qccl
QCCL_API_END
