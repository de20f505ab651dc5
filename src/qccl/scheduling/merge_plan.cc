#include "qccl/scheduling/merge_plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

constexpr double kMaxPartitionsTried = 1e8;
constexpr std::size_t kMaxExhaustiveTensors = 24;

bool finite_nonnegative(double value) { return std::isfinite(value) && value >= 0; }

void require_time(double value, const std::string& what) {
  if (!finite_nonnegative(value)) {
    throw InvalidArgument("step profile: " + what + " is " + std::to_string(value) +
                          "; times must be finite and >= 0 (measure the step again)");
  }
}

void validate(const GroupCosts& costs) {
  const double values[] = {costs.codec.fixed, costs.codec.per_element, costs.communication.fixed,
                           costs.communication.per_element};
  for (const double value : values) {
    if (!finite_nonnegative(value)) {
      throw InvalidArgument("group costs: " + std::to_string(value) +
                            " is not a cost; every B and γ must be finite and >= 0 (fit the "
                            "costs again, or clamp them)");
    }
  }
}

// Sums of elements and maxima of ready times over runs of tensors, each in
// O(1): a group's size and the moment its last gradient is ready.
class TensorRuns {
 public:
  explicit TensorRuns(const StepProfile& profile)
      : prefix_(profile.elements.size() + 1, 0), max_ready_{profile.ready} {
    for (std::size_t t = 0; t < profile.elements.size(); ++t) {
      prefix_[t + 1] = prefix_[t] + profile.elements[t];
    }
    // Sparse table: max_ready_[k][t] is the latest ready time of tensors t .. t + 2^k − 1.
    for (std::size_t width = 2; width <= count(); width *= 2) {
      const auto& previous = max_ready_.back();
      std::vector<double> level(count() - width + 1);
      for (std::size_t t = 0; t < level.size(); ++t) {
        level[t] = std::max(previous[t], previous[t + width / 2]);
      }
      max_ready_.push_back(std::move(level));
    }
  }

  std::size_t count() const { return prefix_.size() - 1; }
  double elements(std::size_t begin, std::size_t end) const {
    return static_cast<double>(prefix_[end] - prefix_[begin]);
  }
  double ready(std::size_t begin, std::size_t end) const {
    const auto level = static_cast<std::size_t>(std::bit_width(end - begin) - 1);
    const auto& table = max_ready_[level];
    return std::max(table[begin], table[end - (std::size_t{1} << level)]);
  }

 private:
  std::vector<std::size_t> prefix_;
  std::vector<std::vector<double>> max_ready_;
};

// Where the two threads are after some groups.
struct StepClocks {
  double communication = 0;  // when the communication thread finished its last group
  double training = 0;       // when the training thread finished its last update
};

// The step of MergeComp §4.3 (Eq. 7 with the costs of Assumption 5), one
// group at a time. The overlap term p of Eq. 7 is not computed: it is what
// the simulated timeline hides. Group i (tensors begin .. end − 1) is ready
// at R_i, the latest of its tensors' ready times; the communication thread
// starts it at max(R_i, end of group i − 1) and spends h(x_i) + g(x_i) on it;
// with overlapped updates the training thread, free from backward_end on,
// updates it at max(its clock, the group's end) for optimizer·x_i.
class StepSimulator {
 public:
  StepSimulator(const StepProfile& profile, const GroupCosts& costs)
      : profile_(profile), costs_(costs), runs_(profile) {}

  const TensorRuns& runs() const { return runs_; }
  std::size_t tensors() const { return runs_.count(); }
  StepClocks start() const { return {0, profile_.backward_end}; }

  StepClocks after_group(StepClocks clocks, std::size_t begin, std::size_t end) const {
    const double x = runs_.elements(begin, end);
    const double begins = std::max(runs_.ready(begin, end), clocks.communication);
    clocks.communication = begins + costs_.codec(x) + costs_.communication(x);
    if (profile_.overlap_updates) {
      clocks.training = std::max(clocks.training, clocks.communication) +
                        profile_.optimizer_per_element * x;
    }
    return clocks;
  }

  // F: the last update's end plus the step's other time. Without overlap the
  // whole model is updated once backward has returned and the last group is in.
  double finish(const StepClocks& clocks) const {
    if (profile_.overlap_updates) return clocks.training + profile_.other;
    const double updates = profile_.optimizer_per_element * runs_.elements(0, tensors());
    return std::max(profile_.backward_end, clocks.communication) + updates + profile_.other;
  }

  // F of the last two groups: tensors first .. cut − 1 and cut .. N − 1.
  double with_last_two(const StepClocks& before, std::size_t first, std::size_t cut) const {
    return finish(after_group(after_group(before, first, cut), cut, tensors()));
  }

  double predict(const GroupSizes& groups) const {
    StepClocks clocks = start();
    std::size_t begin = 0;
    for (const std::size_t size : groups) {
      clocks = after_group(clocks, begin, begin + size);
      begin += size;
    }
    return finish(clocks);
  }

 private:
  const StepProfile& profile_;
  const GroupCosts& costs_;
  TensorRuns runs_;
};

void require_groups_cover(const GroupSizes& groups, std::size_t tensors) {
  std::size_t total = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g] == 0) {
      throw InvalidArgument("groups: group " + std::to_string(g) +
                            " is empty; every group needs at least one tensor");
    }
    total += groups[g];
  }
  if (groups.empty() || total != tensors) {
    throw InvalidArgument("groups " + format_group_sizes(groups) + " hold " +
                          std::to_string(total) + " tensors but the profile has " +
                          std::to_string(tensors) + "; the group sizes must add up to it");
  }
}

// Binomial coefficient as a double (only compared against a limit).
double choose(std::size_t n, std::size_t k) {
  if (k > n) return 0;
  double result = 1;
  for (std::size_t i = 1; i <= k; ++i) result = result * static_cast<double>(n - k + i) / i;
  return result;
}

// Partitions one best_partition(y) evaluates: every (y − 2)-cut prefix that
// leaves room for two more groups, C(N − 2, y − 2), times the last cuts it
// tries — all of them (scan: C(N − 1, y − 1) in all) or two bisections'
// worth and their two candidates (binary).
double partitions_tried(std::size_t tensors, std::size_t groups, LastCutSearch search) {
  if (groups <= 1) return 1;
  if (search == LastCutSearch::scan) return choose(tensors - 1, groups - 1);
  const double bisection = 2.0 * (std::bit_width(tensors) + 1) + 3;
  return choose(tensors - 2, groups - 2) * bisection;
}

// The greatest Y whose Algorithm-2 search stays within the limit.
std::size_t largest_affordable_groups(std::size_t tensors, LastCutSearch search) {
  double total = 0;
  std::size_t y = 0;
  while (y < tensors && total + partitions_tried(tensors, y + 1, search) <= kMaxPartitionsTried) {
    total += partitions_tried(tensors, ++y, search);
  }
  return y;
}

// The last cut by bisection, following Theorem 3's proof (MergeComp §9.3.3).
// With the first y − 2 groups fixed (the communication thread free at
// `before`), the last two groups are tensors first .. c − 1 and c .. N − 1.
// Two candidates are bisected for, and the better one returned:
//
// 1. The proof's turning point: the smallest c at which group y − 1's
//    communication ends no earlier than group y's gradients are ready. Group
//    y − 1's end never decreases with c and group y's ready time never
//    increases, so this test is monotone in c for any ready times. Before
//    the turning point group y waits for its own tail (its end, R_y + h + g
//    of a shrinking group, does not increase with c); from it on group y
//    waits for the head (its end, group y − 1's end plus a constant Σ(h + g),
//    does not decrease). So the last group ends earliest at c* − 1 or c*,
//    and without overlapped updates, or with a free optimizer, F is a
//    nondecreasing function of that end: this candidate is then exact.
// 2. With overlapped updates the optimizer's share shifts the minimum past
//    the turning point; the second candidate is the smallest c with
//    F(c) <= F(c + 1), the minimum whenever F strictly decreases up to its
//    first minimum and does not decrease after it (unimodal in c).
//
// When F has several local minima, both may miss: `scan` is for that case.
std::size_t bisect_last_cut(const StepSimulator& step, const StepClocks& before,
                            std::size_t first) {
  const std::size_t n = step.tensors();
  const auto first_true = [&](auto&& predicate) {  // smallest c in [first + 1, n − 1], else n
    std::size_t low = first + 1, high = n;
    while (low < high) {
      const std::size_t middle = low + (high - low) / 2;
      if (predicate(middle)) high = middle; else low = middle + 1;
    }
    return low;
  };
  const std::size_t turning = first_true([&](std::size_t c) {
    return step.after_group(before, first, c).communication >= step.runs().ready(c, n);
  });
  const auto seconds = [&](std::size_t c) { return step.with_last_two(before, first, c); };
  const std::size_t local_minimum =
      first_true([&](std::size_t c) { return c + 1 == n || seconds(c) <= seconds(c + 1); });
  std::size_t best = local_minimum;
  for (const std::size_t c : {turning - 1, std::min(turning, n - 1)}) {
    if (c > first && seconds(c) < seconds(best)) best = c;
  }
  return best;
}

std::size_t scan_last_cut(const StepSimulator& step, const StepClocks& before, std::size_t first) {
  std::size_t best = first + 1;
  double best_seconds = step.with_last_two(before, first, best);
  for (std::size_t c = first + 2; c < step.tensors(); ++c) {
    const double seconds = step.with_last_two(before, first, c);
    if (seconds < best_seconds) best_seconds = seconds, best = c;
  }
  return best;
}

// X*_y by Theorem 3's proof: the first y − 2 cuts enumerated depth first
// (the simulation of the groups they fix carried along), the last cut
// searched for each. Ties keep the first partition found.
class PartitionSearch {
 public:
  PartitionSearch(const StepSimulator& step, LastCutSearch search) : step_(step), search_(search) {}

  GroupSizes best(std::size_t groups) {
    best_seconds_ = std::numeric_limits<double>::infinity();
    prefix_.clear();
    extend(step_.start(), 0, groups);
    return best_;
  }

 private:
  void extend(const StepClocks& clocks, std::size_t first, std::size_t groups_left) {
    const std::size_t n = step_.tensors();
    if (groups_left == 2) return finish_last_two(clocks, first);
    for (std::size_t cut = first + 1; cut + groups_left - 1 <= n; ++cut) {
      prefix_.push_back(cut - first);
      extend(step_.after_group(clocks, first, cut), cut, groups_left - 1);
      prefix_.pop_back();
    }
  }

  void finish_last_two(const StepClocks& clocks, std::size_t first) {
    const std::size_t cut = search_ == LastCutSearch::binary ? bisect_last_cut(step_, clocks, first)
                                                             : scan_last_cut(step_, clocks, first);
    const double seconds = step_.with_last_two(clocks, first, cut);
    if (seconds < best_seconds_) {
      best_seconds_ = seconds;
      best_ = prefix_;
      best_.push_back(cut - first);
      best_.push_back(step_.tensors() - cut);
    }
  }

  const StepSimulator& step_;
  LastCutSearch search_;
  GroupSizes prefix_, best_;
  double best_seconds_ = 0;
};

void require_affordable(std::size_t tensors, std::size_t groups, LastCutSearch search,
                        double tried) {
  if (tried > kMaxPartitionsTried) {
    throw InvalidArgument("searching up to " + std::to_string(groups) + " groups of " +
                          std::to_string(tensors) + " tensors would try about " +
                          std::to_string(tried) + " partitions (limit 1e8); use at most " +
                          std::to_string(largest_affordable_groups(tensors, search)) +
                          " groups");
  }
}

}  // namespace

void validate(const StepProfile& profile) {
  if (profile.elements.empty()) {
    throw InvalidArgument("step profile: no tensors; profile a step of a model with parameters");
  }
  if (profile.ready.size() != profile.elements.size()) {
    throw InvalidArgument("step profile: " + std::to_string(profile.ready.size()) +
                          " ready times for " + std::to_string(profile.elements.size()) +
                          " tensors; give one ready time per tensor");
  }
  for (std::size_t t = 0; t < profile.ready.size(); ++t) {
    require_time(profile.ready[t], "tensor " + std::to_string(t) + "'s ready time");
  }
  require_time(profile.backward_end, "backward_end");
  require_time(profile.optimizer_per_element, "optimizer_per_element");
  require_time(profile.other, "other");
}

// MergeComp §4.3, Eq. 7: F(X_y) by simulating the step.
double predict_step_seconds(const StepProfile& profile, const GroupCosts& costs,
                            const GroupSizes& groups) {
  validate(profile);
  validate(costs);
  require_groups_cover(groups, profile.elements.size());
  return StepSimulator(profile, costs).predict(groups);
}

// MergeComp Theorem 3 (proof in §9.3.3): X*_y in O(N^(y−2) log N) with
// binary search, O(N^(y−1)) with scan.
GroupSizes best_partition(const StepProfile& profile, const GroupCosts& costs, std::size_t groups,
                          LastCutSearch search) {
  validate(profile);
  validate(costs);
  const std::size_t n = profile.elements.size();
  if (groups == 0 || groups > n) {
    throw InvalidArgument("cannot partition " + std::to_string(n) + " tensors into " +
                          std::to_string(groups) + " groups; ask for 1 to " + std::to_string(n));
  }
  if (groups == 1) return {n};
  require_affordable(n, groups, search, partitions_tried(n, groups, search));
  const StepSimulator step(profile, costs);
  return PartitionSearch(step, search).best(groups);
}

// MergeComp Algorithm 2: more groups while they pay off by at least α.
MergeCompChoice mergecomp_search(const StepProfile& profile, const GroupCosts& costs,
                                 const MergeCompOptions& options) {
  validate(profile);
  validate(costs);
  if (options.max_groups == 0) {
    throw InvalidArgument("MergeComp search: Y = 0 groups; use Y >= 1 (the paper's default is 2)");
  }
  if (!(options.alpha >= 0 && options.alpha < 1)) {
    throw InvalidArgument("MergeComp search: α = " + std::to_string(options.alpha) +
                          " is outside [0, 1); it is the least relative gain worth one more group");
  }
  const std::size_t n = profile.elements.size();
  const std::size_t max_groups = std::min(options.max_groups, n);
  double tried = 0;
  for (std::size_t y = 1; y <= max_groups; ++y) tried += partitions_tried(n, y, options.search);
  require_affordable(n, max_groups, options.search, tried);

  const StepSimulator step(profile, costs);
  PartitionSearch search(step, options.search);
  MergeCompChoice choice;
  choice.groups = {n};
  choice.predicted = step.predict(choice.groups);
  choice.best_by_groups.push_back(choice.predicted);
  for (std::size_t y = 2; y <= max_groups; ++y) {
    GroupSizes groups = search.best(y);
    const double previous = choice.predicted, seconds = step.predict(groups);
    choice.best_by_groups.push_back(seconds);
    if (previous < seconds) return choice;  // y groups are worse: keep X*_{y−1}
    choice.groups = std::move(groups);
    choice.predicted = seconds;
    if (previous - seconds < options.alpha * previous) return choice;  // too little gain
  }
  return choice;
}

// MergeComp Lemma 1: all 2^(N−1) partitions, bit t of the mask cutting
// between tensors t and t + 1.
GroupSizes exhaustive_best_partition(const StepProfile& profile, const GroupCosts& costs) {
  validate(profile);
  validate(costs);
  const std::size_t n = profile.elements.size();
  if (n > kMaxExhaustiveTensors) {
    throw InvalidArgument("exhaustive partition search over " + std::to_string(n) +
                          " tensors would try 2^" + std::to_string(n - 1) +
                          " partitions; it is for at most 24 tensors (use mergecomp_search)");
  }
  const StepSimulator step(profile, costs);
  GroupSizes best;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (std::uint32_t cuts = 0; cuts < (std::uint32_t{1} << (n - 1)); ++cuts) {
    StepClocks clocks = step.start();
    std::size_t begin = 0;
    GroupSizes groups;
    for (std::size_t t = 0; t < n; ++t) {
      if (t + 1 == n || (cuts >> t & 1u)) {
        clocks = step.after_group(clocks, begin, t + 1);
        groups.push_back(t + 1 - begin);
        begin = t + 1;
      }
    }
    const double seconds = step.finish(clocks);
    if (seconds < best_seconds) best_seconds = seconds, best = std::move(groups);
  }
  return best;
}

}  // namespace qccl
