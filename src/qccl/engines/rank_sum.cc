#include "qccl/engines/rank_sum.h"

#include <cstdint>

#include "qccl/collectives/collective_call.h"
#include "qccl/transport/transport.h"

namespace qccl::engines {

void sum_over_ranks(Communicator& comm, std::span<double> values, std::string_view what) {
  Fingerprint fingerprint("train sum");
  fingerprint.add_text("what", what).add("count", static_cast<std::int64_t>(values.size()));
  const Timeout timeout = comm.timeout(std::nullopt);
  run_collective(comm, fingerprint, timeout, [&](int) {
    if (comm.size() > 1) allreduce_values<double>(comm.transport(), values, ReduceOp::sum, timeout);
  });
}

}  // namespace qccl::engines
