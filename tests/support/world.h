// Test helper: runs a body on N in-process ranks, each with a communicator.
#pragma once

#include <functional>

#include "qccl/collectives/communicator.h"
#include "qccl/transport/local_transport.h"

namespace qccl::test {

// Short enough that a bug fails a test instead of hanging it.
inline constexpr Timeout kTestTimeout = std::chrono::seconds(30);

inline void run_world(int ranks, const std::function<void(Communicator&)>& body,
                      CommunicatorOptions options = {kTestTimeout, true}) {
  run_in_process(ranks, [&](Transport& transport) {
    Communicator comm(transport, options);
    body(comm);
  });
}

}  // namespace qccl::test
