// Checks of streams written against a Communicator, so the same checks run in
// process and under mpirun.
#pragma once

#include <cstddef>

#include "qccl/collectives/communicator.h"
#include "qccl/common/duration.h"

namespace qccl::test {

// Two streams in flight at once: stream "weights" runs an allgather of
// `shard` elements per rank whose operation cannot finish before stream
// "grads" has completed a reduce-scatter of `vector` elements on the same
// rank, and the ranks submit the two in opposite orders. If the streams
// shared a tag space, a call sequence or a thread, this would mix their
// messages or wait forever. Both results must be exact, and the caller's own
// communicator stays free meanwhile. `timeout` bounds every wait.
void check_two_streams_in_flight(Communicator& comm, std::size_t shard, std::size_t vector,
                                 Timeout timeout);

}  // namespace qccl::test
