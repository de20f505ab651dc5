// Test helper: runs a body on N in-process ranks, each with a communicator.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include <gtest/gtest.h>

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

// Runs `body` on every rank, expecting each to throw E; returns rank 0's message.
template <typename E>
inline std::string expect_throw_on_every_rank(int ranks, const std::function<void(Communicator&)>& body,
                                       CommunicatorOptions options = {kTestTimeout, true}) {
  std::atomic<int> thrown{0};
  std::string message;
  run_world(
      ranks,
      [&](Communicator& comm) {
        try {
          body(comm);
        } catch (const E& e) {
          ++thrown;
          if (comm.rank() == 0) message = e.what();
        }
      },
      options);
  EXPECT_EQ(thrown.load(), ranks) << "not every rank raised the error";
  return message;
}

}  // namespace qccl::test
