// Streams and work handles: independent operations in flight at once on one
// communicator, in any order, without crosstalk; handles that test, wait,
// keep the failure and call back; a wait that times out cancels only its own
// stream and names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "../support/patterns.h"
#include "../support/stream_checks.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/stream.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Independent operations in flight on two streams (stream_checks.h).
TEST(StreamTest, TwoStreamsInFlightCompleteWithoutCrosstalk) {
  for (int n : {2, 3, 4, 7}) {
    run_world(n, [&](Communicator& comm) {
      check_two_streams_in_flight(comm, 1000, 3001, kTestTimeout);
    });
  }
}

TEST(StreamTest, OperationsOnAStreamRunInSubmissionOrder) {
  run_world(3, [](Communicator& comm) {
    Stream stream(comm, "ordered");
    std::vector<int> order;
    std::vector<Work> works;
    for (int k = 0; k < 20; ++k) {
      works.push_back(stream.submit("op " + std::to_string(k), [&order, k](Communicator& c) {
        order.push_back(k);
        std::vector<float> x(3, static_cast<float>(k));
        Fp32Sum sum;
        allreduce(c, x, sum);
        EXPECT_EQ(x[0], static_cast<float>(3 * k));
      }));
    }
    for (auto& w : works) w.wait(kTestTimeout);
    for (int k = 0; k < 20; ++k) EXPECT_EQ(order[static_cast<std::size_t>(k)], k);
  });
}

TEST(WorkTest, KeepsTheFailureAndCallsBack) {
  run_world(2, [](Communicator& comm) {
    Stream stream(comm, "s");
    std::atomic<int> called{0};
    std::promise<void> release;
    auto gate = release.get_future().share();
    Work failing = stream.submit("bad input", [gate](Communicator& c) {
      gate.wait();
      std::vector<float> data(4, c.rank() == 0 ? std::nanf("") : 1.0f);
      make_codec("fp16")->allreduce_mean(c, data);
    });
    EXPECT_FALSE(failing.completed());
    EXPECT_FALSE(failing.test());
    failing.on_completion([&](const Work& w) {
      EXPECT_TRUE(w.completed());
      EXPECT_NE(w.exception(), nullptr);
      ++called;
    });
    release.set_value();
    EXPECT_THROW(failing.wait(kTestTimeout), NonFiniteError);
    EXPECT_THROW(failing.test(), NonFiniteError);
    EXPECT_EQ(called.load(), 1);
    // A callback on a completed handle runs at once, here.
    failing.on_completion([&](const Work&) { ++called; });
    EXPECT_EQ(called.load(), 2);
    // Non-finite input poisons nothing: the stream goes on.
    Work next = stream.submit("good input", [](Communicator& c) {
      std::vector<float> data(4, 1.0f);
      make_codec("fp16")->allreduce_mean(c, data);
    });
    next.wait(kTestTimeout);
    EXPECT_TRUE(next.test());
    EXPECT_EQ(next.exception(), nullptr);
    // A callback that throws is reported by the next wait on its handle.
    Work quiet = stream.submit("quiet", [](Communicator&) {},
                               [](const Work&) { throw InvalidArgument("callback failed"); });
    EXPECT_THROW(quiet.wait(kTestTimeout), InvalidArgument);
  });
  EXPECT_THROW(Work().wait(kTestTimeout), InvalidArgument);
}

// Rank 1 never submits its part of stream "stuck": rank 0's handle times
// out, naming the stream and the operation, the stream is cancelled (its
// queued operation fails at once, naming the cause) — and stream "free" and
// the caller's communicator carry on.
TEST(WorkTest, ATimedOutHandlePoisonsOnlyItsStreamAndNamesIt) {
  run_world(2, [](Communicator& comm) {
    Stream stuck(comm, "stuck");
    Stream free(comm, "free");
    Fp32Sum sum;
    std::vector<float> x(64, 1.0f), y(64, 1.0f), z(64, 1.0f);
    if (comm.rank() == 0) {
      Work lonely = stuck.submit("bucket 0", [&](Communicator& c) { allreduce(c, x, sum); });
      Work queued = stuck.submit("bucket 1", [&](Communicator& c) { allreduce(c, z, sum); });
      const auto start = Clock::now();
      try {
        lonely.wait(std::chrono::milliseconds(200));
        ADD_FAILURE() << "a lonely allreduce completed";
      } catch (const TimeoutError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("stream 'stuck' operation 0 (bucket 0)"));
        EXPECT_THAT(std::string(e.what()), HasSubstr("200 ms"));
      }
      // Cancelled, the operation stopped within a few wait slices, far
      // before the stream's own 30 s timeout.
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
      EXPECT_TRUE(lonely.completed());
      try {
        queued.wait(kTestTimeout);
        ADD_FAILURE() << "an operation ran on a cancelled stream";
      } catch (const CommError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("stream 'stuck'"));
        EXPECT_THAT(std::string(e.what()), HasSubstr("abandoned"));
      }
      EXPECT_TRUE(stuck.communicator().poisoned());
    }
    // Both ranks: the other stream and the communicator still work.
    free.submit("after", [&](Communicator& c) { allreduce(c, y, sum); }).wait(kTestTimeout);
    EXPECT_EQ(y, std::vector<float>(64, 2.0f));
    std::vector<float> w(3, 1.0f);
    allreduce(comm, w, sum);
    EXPECT_EQ(w, std::vector<float>(3, 2.0f));
  });
}

// The same when the stuck operation is inside a transport-level collective
// (algorithm native, with no call check in front of it): cancelling the
// stream interrupts its transport, so in process the collective withdraws
// at once instead of waiting out the stream's timeout; the world goes on.
TEST(WorkTest, ACancelledTransportLevelCollectiveStopsAtOnce) {
  run_world(
      2,
      [](Communicator& comm) {
        Stream stuck(comm, "stuck");
        Fp32Sum sum;
        std::vector<float> x(64, 1.0f);
        if (comm.rank() == 0) {
          CollectiveOptions native;
          native.algorithm = Algorithm::native;
          Work lonely = stuck.submit("native", [&](Communicator& c) { allreduce(c, x, sum, native); });
          const auto start = Clock::now();
          try {
            lonely.wait(std::chrono::milliseconds(200));
            ADD_FAILURE() << "a lonely native allreduce completed";
          } catch (const TimeoutError& e) {
            EXPECT_THAT(std::string(e.what()), HasSubstr("stream 'stuck' operation 0 (native)"));
            EXPECT_THAT(std::string(e.what()), Not(HasSubstr("still inside")));
          }
          EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
          EXPECT_TRUE(lonely.completed());
          EXPECT_THAT([&] { lonely.test(); },
                      ::testing::ThrowsMessage<CommError>(HasSubstr("interrupted")));
        }
        std::vector<float> w(3, 1.0f);
        allreduce(comm, w, sum);
        EXPECT_EQ(w, std::vector<float>(3, 2.0f));
      },
      CommunicatorOptions{kTestTimeout, /*check_args=*/false});
}

// A failure inside an operation poisons its stream only; the message names
// the stream.
TEST(WorkTest, AFailureMidFlightNamesTheStreamAndLeavesOthersUsable) {
  run_world(
      2,
      [](Communicator& comm) {
        Stream a(comm, "a");
        Stream b(comm, "b");
        Fp32Sum sum;
        std::vector<float> data(8, 1.0f);
        // Rank 1 enters with another length (the call check is bypassed on
        // purpose): the ring fails on one rank, times out on the other.
        Work bad = a.submit("mismatched", [&](Communicator& c) {
          Communicator& raw = c;
          std::vector<float> mine(c.rank() == 0 ? 100 : 101, 1.0f);
          CollectiveOptions o;
          o.timeout = std::chrono::milliseconds(300);
          Fingerprint nothing("deliberately unchecked");
          CollectiveCall call(raw, nothing, std::chrono::milliseconds(300));
          call.move([&](int tag) { allreduce_body(raw, tag, mine, mine, sum, o); });
        });
        try {
          bad.wait(kTestTimeout);
          ADD_FAILURE() << "mismatched lengths went unnoticed";
        } catch (const Error& e) {
          EXPECT_THAT(std::string(e.what()), HasSubstr("stream 'a'"));
        }
        EXPECT_TRUE(a.communicator().poisoned());
        b.submit("fine", [&](Communicator& c) { allreduce(c, data, sum); }).wait(kTestTimeout);
        EXPECT_EQ(data, std::vector<float>(8, 2.0f));
      });
}

}  // namespace
}  // namespace qccl::test
