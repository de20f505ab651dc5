#include "qccl/scheduling/slowest_profile.h"

#include <string>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/scheduling/rank_values.h"

namespace qccl {

// The times as one vector: ready per tensor, then backward_end,
// optimizer_per_element and other; the tensor count leads, so ranks whose
// models differ are caught.
StepProfile slowest_rank_profile(Communicator& comm, const StepProfile& mine,
                                 const CollectiveOptions& options) {
  validate(mine);
  std::vector<double> times{static_cast<double>(mine.ready.size())};
  times.insert(times.end(), mine.ready.begin(), mine.ready.end());
  times.push_back(mine.backward_end);
  times.push_back(mine.optimizer_per_element);
  times.push_back(mine.other);
  const std::vector<double> counts =
      gather_over_ranks(comm, std::span(times).first(1), options);
  for (const double count : counts) {
    if (count != times[0]) {
      throw InvalidArgument("the MergeComp profile: this rank profiled " +
                            std::to_string(mine.ready.size()) + " tensors and another rank " +
                            std::to_string(static_cast<long long>(count)) +
                            "; every rank must train the same model");
    }
  }
  const std::vector<double> slowest = max_over_ranks(comm, times, options);
  StepProfile profile = mine;
  const std::size_t n = mine.ready.size();
  std::copy_n(slowest.begin() + 1, n, profile.ready.begin());
  profile.backward_end = slowest[n + 1];
  profile.optimizer_per_element = slowest[n + 2];
  profile.other = slowest[n + 3];
  return profile;
}

}  // namespace qccl
