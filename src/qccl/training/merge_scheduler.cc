#include "qccl/training/merge_scheduler.h"

#include <algorithm>
#include <cmath>

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/statistics.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/scheduling/group_costs.h"
#include "qccl/scheduling/merge_plan.h"
#include "qccl/scheduling/slowest_profile.h"

namespace qccl::engines {
namespace {

// The profiled steps' medians as the model's profile, tensors in reverse
// registration order. A parameter backward never reached is ready at the
// end of backward (the engine zeroes it then).
StepProfile median_profile(const std::vector<std::vector<double>>& ready,
                           const std::vector<double>& backward, const std::vector<double>& optimizer,
                           const std::vector<double>& data, const BucketedExchange& engine,
                           bool overlap_updates) {
  StepProfile profile;
  profile.backward_end = median(backward);
  const auto counts = engine.tensor_elements();
  const std::size_t tensors = counts.size();
  for (std::size_t k = 0; k < tensors; ++k) {
    const std::size_t t = tensors - 1 - k;
    std::vector<double> times;
    for (std::size_t step = 0; step < ready.size(); ++step) {
      times.push_back(std::isnan(ready[step][t]) ? backward[step] : ready[step][t]);
    }
    profile.ready.push_back(median(times));
    profile.elements.push_back(counts[t]);
  }
  profile.optimizer_per_element = median(optimizer) / static_cast<double>(engine.elements());
  profile.overlap_updates = overlap_updates;
  profile.other = median(data);
  return profile;
}

// Rank 0's choice on every rank: the group sizes summed over ranks, every
// other rank adding zeros (one checked call; exact in fp64).
GroupSizes broadcast_groups(Communicator& comm, const GroupSizes& mine, std::size_t tensors) {
  std::vector<double> values(tensors, 0.0);
  if (comm.rank() == 0) std::copy(mine.begin(), mine.end(), values.begin());
  sum_over_ranks(comm, values, "the MergeComp plan");
  GroupSizes groups;
  for (const double v : values) {
    if (v > 0) groups.push_back(static_cast<std::size_t>(v));
  }
  return groups;
}

}  // namespace

std::shared_ptr<const BucketPolicy> initial_bucket_policy(const TrainConfig& config) {
  const auto& name = config.buckets;
  if (name == "ddp") {
    return std::make_shared<SizeCappedPolicy>(config.bucket_cap_bytes, config.first_bucket_bytes);
  }
  if (name == "layerwise") return std::make_shared<LayerwisePolicy>();
  if (name == "one" || name == "mergecomp") return std::make_shared<SingleBucketPolicy>();
  if (name.rfind("groups:", 0) == 0) {
    return std::make_shared<GroupsPolicy>(parse_group_sizes(name.substr(7)));
  }
  throw InvalidArgument("unknown --buckets '" + name + "'; choose ddp, layerwise, one, "
                        "groups:N1,N2,.. or mergecomp");
}

void MergeCompScheduler::observe(const BucketedExchange& engine, double data_seconds,
                                 double optimizer_seconds) {
  if (planned_ || observed_++ == 0) return;
  ready_.push_back(engine.ready_seconds());
  backward_.push_back(engine.backward_seconds());
  optimizer_.push_back(optimizer_seconds);
  data_.push_back(data_seconds);
}

// MergeComp §4.3: the slowest rank's profile, h and g measured on this
// communicator on groups of the model's tensors, then Algorithm 2 (the same
// inputs on every rank) and rank 0's choice everywhere.
PlanReport MergeCompScheduler::plan(Communicator& comm, BucketedExchange& engine) {
  const auto start = Clock::now();
  const StepProfile profile = slowest_rank_profile(
      comm, median_profile(ready_, backward_, optimizer_, data_, engine, config_.overlap_updates));
  GroupCostOptions cost_options;
  cost_options.codec = config_.codec;
  cost_options.seed = config_.seed;
  cost_options.collective.algorithm = config_.algorithm;
  cost_options.tensor_elements = profile.elements;  // in group order, last layers first
  auto measured = measure_group_costs(comm, cost_options);
  if (config_.plan_link_rate > 0) {
    measured = fit_group_costs(measured.samples, config_.algorithm, comm.size(),
                               config_.plan_link_rate);
  }
  MergeCompOptions search;
  search.max_groups = config_.plan_max_groups;
  search.alpha = config_.plan_alpha;
  // Theorem 3's binary search over the last cut is exact when the updates
  // wait for the last group (or cost nothing); with updates overlapping
  // the exchange F need not be unimodal in the cut, so every cut is tried
  // (N evaluations of the model, microseconds).
  const bool theorem_3_setting = !profile.overlap_updates || profile.optimizer_per_element == 0;
  search.search = theorem_3_setting ? LastCutSearch::binary : LastCutSearch::scan;
  const MergeCompChoice choice = mergecomp_search(profile, measured.costs, search);
  const std::size_t tensors = profile.elements.size();
  const GroupSizes groups = broadcast_groups(comm, choice.groups, tensors);

  PlanReport report;
  report.profiled_steps = ready_.size();
  report.tensors = tensors;
  report.backward_seconds = profile.backward_end;
  report.optimizer_seconds = profile.optimizer_per_element * static_cast<double>(engine.elements());
  report.other_seconds = profile.other;
  report.codec_fixed = measured.costs.codec.fixed;
  report.codec_per_element = measured.costs.codec.per_element;
  report.communication_fixed = measured.costs.communication.fixed;
  report.communication_per_element = measured.costs.communication.per_element;
  report.reduction_per_element = measured.reduction.per_element;
  report.wire_bytes_per_element = measured.wire_bytes_per_element;
  report.link_bytes_per_second = measured.network.beta;
  report.best_by_groups = choice.best_by_groups;
  const auto counts = engine.tensor_elements();
  const auto predicted = [&](std::string name, const GroupSizes& g) {
    report.predictions.push_back({std::move(name), g, predict_step_seconds(profile, measured.costs, g)});
  };
  predicted("mergecomp", groups);
  predicted("layerwise", GroupSizes(tensors, 1));
  predicted("one", GroupSizes{tensors});
  predicted("ddp", group_sizes_of(SizeCappedPolicy(config_.bucket_cap_bytes, config_.first_bucket_bytes)
                                      .plan(counts)));
  engine.replan(std::make_shared<GroupsPolicy>(groups));
  planned_ = true;
  report.search_seconds = seconds_since(start);
  return report;
}

}  // namespace qccl::engines
