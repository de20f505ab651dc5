// The profile MergeComp plans from when ranks profile different times: the
// slowest rank's. A group's exchange starts when its last gradient is ready
// on every rank, and a step ends when its slowest rank does, so the plan is
// searched on the maximum over ranks of each time (MergeComp §4.3's A and
// p, measured on every rank), not on one rank's.
#pragma once

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"
#include "qccl/scheduling/merge_plan.h"

QCCL_API_BEGIN
namespace qccl {

// Collective: `mine` with every time — each tensor's ready time, the end of
// backward, the optimizer's time per element and the other time — replaced
// by its maximum over ranks; identical on every rank. Throws
// InvalidArgument naming the fault when `mine` is invalid or when ranks
// profiled different numbers of tensors.
StepProfile slowest_rank_profile(Communicator& comm, const StepProfile& mine,
                                 const CollectiveOptions& options = {});

}  // namespace qccl
QCCL_API_END
