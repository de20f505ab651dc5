// `qccl bench timeline LOG`: where a training step's time goes, bucket by
// bucket, from the timeline that `qccl train --log` writes on every step
// line (docs/training.md): when each bucket's exchange ran on the
// communication thread and when its update ran on the training thread.
// Medians over the steps after the first few (which allocate and warm up)
// show which bucket's exchange is slow, which update runs beside the next
// exchange, and how long the step goes on after the last exchange.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace qccl::tools {

// Medians over the steps read, in seconds since the forward pass began.
struct BucketTimeline {
  double exchange_start = 0, exchange_end = 0, exchange_seconds = 0;
  double update_start = 0, update_end = 0, update_seconds = 0;  // 0 without updates
};

struct StepTimeline {
  std::size_t steps = 0;    // steps summarised
  std::size_t skipped = 0;  // steps left out before them
  // After how many steps a MergeComp plan changed the buckets, when the log
  // has a plan: the steps counted are those after it.
  std::optional<std::size_t> plan_after_step;
  double step_seconds = 0;  // medians of the step lines' fields
  double compute_seconds = 0;
  std::vector<BucketTimeline> buckets;
  bool has_updates = false;  // the run updated bucket by bucket as exchanges ended
  // Medians of per-step quantities: the time from the last exchange's end
  // to the last update's end (0 without updates), and the share of the time
  // from the first exchange's start to the last one's end that some
  // exchange was running.
  double tail_seconds = 0;
  double exchange_busy_share = 0;
};

// Reads the `step` lines of a `qccl train --log` file after its MergeComp
// `plan` line if it has one, leaving out skipped steps (NaN or Inf) and the
// first `skip` of the others. Throws InvalidArgument naming the file and
// line when it cannot be read or parsed, when a step line carries no
// timeline (a run of an engine that does not split its exchange, or of an
// older qccl) or a malformed one, when the bucket count changes without a
// plan line, or when no step is left.
StepTimeline read_step_timeline(const std::string& path, std::size_t skip);

// A table, one row per bucket, in ms.
void print_step_timeline(std::ostream& out, const std::string& path, const StepTimeline& timeline);

}  // namespace qccl::tools
