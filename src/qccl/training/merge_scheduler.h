// MergeComp in training (MergeComp §4.1, §4.3): the data-parallel engine
// starts with the whole model in one bucket, so no transfer competes with
// backward while the first steps are profiled: when each tensor's gradient
// is ready, when backward ends, what the optimizer and the data cost; the
// plan takes each time's maximum over ranks (slowest_profile.h). Then the
// codec's encode/decode h(x) and the collective g(x) are measured on the
// run's communicator on groups of the model's tensors (group_costs.h),
// Algorithm 2 searches the partition (merge_plan.h), rank 0's choice is
// broadcast, and the engine re-plans its buckets; per-tensor codec state
// carries over.
//
// The plan depends on measured times, so two runs may choose differently;
// the log and the summary name the groups, and `--buckets groups:..`
// reproduces a run with them. A checkpoint holds the plan, so a resume
// after planning continues with it exactly.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/engines/engine.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

// The bucket policy a run starts with: config.buckets (mergecomp starts
// with one bucket). Throws InvalidArgument for an unknown name.
std::shared_ptr<const BucketPolicy> initial_bucket_policy(const TrainConfig& config);

class MergeCompScheduler {
 public:
  explicit MergeCompScheduler(const TrainConfig& config) : config_(config) {}

  // After a step of this rank (one that was not skipped): its profile.
  // The first step observed is left out (it allocates what later steps reuse).
  void observe(const BucketedExchange& engine, double data_seconds, double optimizer_seconds);
  // Whether enough steps are profiled to plan.
  bool ready_to_plan() const { return observed_ >= config_.plan_steps && !planned_; }
  // Collective: takes the slowest rank's profile (the maximum over ranks of
  // each time), measures the costs, searches, broadcasts rank 0's choice and
  // re-plans `engine`. The plan, the profile and the predictions in the
  // report are the same on every rank.
  PlanReport plan(Communicator& comm, BucketedExchange& engine);

 private:
  const TrainConfig& config_;
  std::size_t observed_ = 0;
  bool planned_ = false;
  std::vector<std::vector<double>> ready_;  // per profiled step, per tensor (registration order)
  std::vector<double> backward_, optimizer_, data_;
};

}  // namespace qccl::engines
