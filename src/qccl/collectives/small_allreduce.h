// An allreduce of a few int64 values over point-to-point messages on a
// call's tag: the call check's exchange, and small exchanges inside a call
// (counts). Its waits go through Communicator::wait, so they are bounded,
// name the peer they wait for, and stop when the communicator is cancelled
// — unlike the transport's own collectives, which a stream cannot interrupt.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"

namespace qccl {

// Up to 16 ranks, one round: every rank sends its values to every other
// rank and combines all n. Beyond, recursive doubling, any rank count by
// folding: ranks 2i and 2i+1 below 2(n − p) combine first, the p survivors
// exchange their partial results in log2(p) rounds, then each odd rank
// below 2(n − p) sends the result down. MAX and SUM of integers do not
// depend on the order, so every rank ends with identical values.
// ReduceOp::min is refused.
void small_allreduce(Communicator& comm, int tag, std::span<std::int64_t> values, ReduceOp op,
                     Timeout timeout, std::string_view operation);

}  // namespace qccl
