#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstring>
#include <thread>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/transport/local_transport.h"
#include "qccl/transport/transport.h"

namespace qccl {
namespace {

using ::testing::HasSubstr;
constexpr Timeout kWait = std::chrono::seconds(10);

std::span<const std::byte> bytes_of(const std::vector<int>& v) { return std::as_bytes(std::span(v)); }

TEST(LocalTransportTest, MessagesOnOneTagArriveInSendOrder) {
  run_in_process(2, [](Transport& t) {
    if (t.rank() == 0) {
      for (int i = 0; i < 50; ++i) {
        std::vector<int> payload(static_cast<std::size_t>(i + 1), i);
        t.isend(1, 7, bytes_of(payload))->wait(kWait);
      }
    } else {
      // Post half the receives before the messages arrive and half after.
      std::vector<std::vector<int>> buffers(50, std::vector<int>(64, -1));
      std::vector<RequestPtr> early;
      for (int i = 0; i < 25; ++i) {
        early.push_back(t.irecv(0, 7, std::as_writable_bytes(std::span(buffers[static_cast<std::size_t>(i)]))));
      }
      for (auto& r : early) r->wait(kWait);
      for (int i = 25; i < 50; ++i) {
        t.irecv(0, 7, std::as_writable_bytes(std::span(buffers[static_cast<std::size_t>(i)])))->wait(kWait);
      }
      for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(buffers[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)], i);
      }
    }
  });
}

TEST(LocalTransportTest, TagsAreMatchedSeparately) {
  run_in_process(2, [](Transport& t) {
    std::vector<int> a{1}, b{2};
    if (t.rank() == 0) {
      t.isend(1, 1, bytes_of(a));
      t.isend(1, 2, bytes_of(b));
    } else {
      std::vector<int> got2(1), got1(1);
      t.irecv(0, 2, std::as_writable_bytes(std::span(got2)))->wait(kWait);
      t.irecv(0, 1, std::as_writable_bytes(std::span(got1)))->wait(kWait);
      EXPECT_EQ(got1[0], 1);
      EXPECT_EQ(got2[0], 2);
    }
  });
}

TEST(LocalTransportTest, ShorterMessageReportsItsLengthLongerOneFails) {
  run_in_process(2, [](Transport& t) {
    std::vector<int> three{1, 2, 3}, eight(8, 5);
    if (t.rank() == 0) {
      t.isend(1, 0, bytes_of(three));
      t.isend(1, 0, bytes_of(eight));
      t.isend(1, 0, {});
    } else {
      std::vector<int> buffer(4);
      auto r = t.irecv(0, 0, std::as_writable_bytes(std::span(buffer)));
      r->wait(kWait);
      EXPECT_EQ(r->bytes(), 12u);
      auto too_long = t.irecv(0, 0, std::as_writable_bytes(std::span(buffer)));
      try {
        too_long->wait(kWait);
        ADD_FAILURE() << "a message longer than the buffer was accepted";
      } catch (const CommError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("does not fit"));
      }
      auto empty = t.irecv(0, 0, std::as_writable_bytes(std::span(buffer)));
      empty->wait(kWait);
      EXPECT_EQ(empty->bytes(), 0u);
    }
  });
}

TEST(LocalTransportTest, ReceiveTimesOutNamingThePeer) {
  LocalWorld world(2);
  auto t = world.transport(0);
  std::vector<int> buffer(1);
  auto r = t->irecv(1, 3, std::as_writable_bytes(std::span(buffer)));
  try {
    r->wait(std::chrono::milliseconds(50));
    ADD_FAILURE() << "wait returned without a message";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("receive from rank 1 on rank 0 (tag 3"));
  }
}

TEST(LocalTransportTest, AbortWakesAWaitingReceive) {
  LocalWorld world(2);
  auto t0 = world.transport(0);
  auto t1 = world.transport(1);
  std::vector<int> buffer(1);
  auto r = t0->irecv(1, 0, std::as_writable_bytes(std::span(buffer)));
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t1->abort("rank 1 cannot continue", 1);
  });
  try {
    r->wait(std::chrono::seconds(30));
    ADD_FAILURE() << "wait returned after abort";
  } catch (const CommError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("rank 1 cannot continue"));
  }
  aborter.join();
  EXPECT_THROW(t0->barrier(kWait), CommError);
}

TEST(LocalTransportTest, AllreduceOpsInRankOrder) {
  run_in_process(5, [](Transport& t) {
    std::vector<double> v{static_cast<double>(t.rank()), -static_cast<double>(t.rank()), 0.1};
    allreduce_values<double>(t, v, ReduceOp::sum, kWait);
    EXPECT_EQ(v[0], 10.0);
    EXPECT_EQ(v[1], -10.0);
    EXPECT_EQ(v[2], (((0.1 + 0.1) + 0.1) + 0.1) + 0.1);  // rank order, every rank
    std::vector<std::int64_t> m{t.rank(), -t.rank()};
    allreduce_values<std::int64_t>(t, m, ReduceOp::max, kWait);
    EXPECT_EQ(m, (std::vector<std::int64_t>{4, 0}));
    std::vector<float> f{static_cast<float>(t.rank())};
    allreduce_values<float>(t, f, ReduceOp::min, kWait);
    EXPECT_EQ(f[0], 0.0f);
    t.barrier(kWait);
  });
}

TEST(LocalTransportTest, AllreduceWithDifferentSizesFailsOnEveryRank) {
  std::atomic<int> failures{0};
  run_in_process(3, [&](Transport& t) {
    std::vector<double> v(t.rank() == 1 ? 2 : 3, 1.0);
    try {
      allreduce_values<double>(t, v, ReduceOp::sum, kWait);
    } catch (const MismatchError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("rank 1 entered allreduce with 16 bytes"));
      ++failures;
    }
  });
  EXPECT_EQ(failures.load(), 3);
}

// A round that times out fails its context — that duplicate on every rank —
// naming the missing rank; the world and other duplicates go on.
TEST(LocalTransportTest, ATimedOutRoundFailsOnlyItsContext) {
  LocalWorld world(2);
  auto t0 = world.transport(0), t1 = world.transport(1);
  auto d0 = t0->duplicate(kWait), d1 = t1->duplicate(kWait);
  auto e0 = t0->duplicate(kWait), e1 = t1->duplicate(kWait);
  std::vector<double> v{1.0};
  try {
    allreduce_values<double>(*d0, v, ReduceOp::sum, std::chrono::milliseconds(100));
    ADD_FAILURE() << "a round with one rank completed";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("waiting for rank(s) 1 to enter it"));
  }
  try {
    allreduce_values<double>(*d1, v, ReduceOp::sum, kWait);
    ADD_FAILURE() << "a round on a failed context ran";
  } catch (const CommError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("allreduce on rank 0 timed out"));
  }
  for (auto* pair : {&t0, &e0}) {  // the world, and the other duplicate
    Transport& a = **pair;
    Transport& b = pair == &t0 ? *t1 : *e1;
    std::vector<double> x{1.0}, y{2.0};
    std::thread other([&] { allreduce_values<double>(b, y, ReduceOp::sum, kWait); });
    allreduce_values<double>(a, x, ReduceOp::sum, kWait);
    other.join();
    EXPECT_EQ(x[0], 3.0);
    EXPECT_EQ(y[0], 3.0);
  }
}

// interrupt() stops a round this rank waits in at once (withdrawing its
// contribution) and refuses later ones, on that transport only.
TEST(LocalTransportTest, InterruptStopsThisTransportsRounds) {
  LocalWorld world(2);
  auto t0 = world.transport(0), t1 = world.transport(1);
  auto d0 = t0->duplicate(kWait);
  const auto start = Clock::now();
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    d0->interrupt("stream 'x' was cancelled");
  });
  std::vector<double> v{1.0};
  try {
    allreduce_values<double>(*d0, v, ReduceOp::sum, std::chrono::seconds(30));
    ADD_FAILURE() << "an interrupted round completed";
  } catch (const CommError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("interrupted (stream 'x' was cancelled)"));
  }
  interrupter.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT([&] { d0->barrier(kWait); },
              ::testing::ThrowsMessage<CommError>(HasSubstr("barrier on rank 0 not started")));
  std::thread other([&] { t1->barrier(kWait); });
  t0->barrier(kWait);
  other.join();
}

// Each duplicate's context lives until every rank's transport on it ends,
// so making streams again and again does not accumulate them.
TEST(LocalTransportTest, ContextsAreFreedOnceEveryRanksTransportEnds) {
  LocalWorld world(3);
  std::vector<std::unique_ptr<Transport>> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(world.transport(r));
  EXPECT_EQ(world.context_count(), 1u);
  for (int round = 0; round < 5; ++round) {
    std::vector<std::unique_ptr<Transport>> duplicates;
    for (auto& t : ranks) duplicates.push_back(t->duplicate(kWait));
    EXPECT_EQ(world.context_count(), 2u);
    duplicates.pop_back();
    duplicates.pop_back();
    EXPECT_EQ(world.context_count(), 2u);  // rank 0's is still alive
  }
  EXPECT_EQ(world.context_count(), 1u);
}

TEST(LocalTransportTest, BadAddressesAreRejected) {
  LocalWorld world(2);
  auto t = world.transport(0);
  std::vector<int> b(1);
  EXPECT_THROW(t->isend(2, 0, bytes_of(b)), InvalidArgument);
  EXPECT_THROW(t->irecv(-1, 0, std::as_writable_bytes(std::span(b))), InvalidArgument);
  EXPECT_THROW(t->isend(1, -5, bytes_of(b)), InvalidArgument);
  EXPECT_THROW(LocalWorld(0), InvalidArgument);
}

TEST(LocalTransportTest, CountsBytesSent) {
  run_in_process(2, [](Transport& t) {
    std::vector<int> payload(10);
    if (t.rank() == 0) {
      t.isend(1, 0, bytes_of(payload));
      t.isend(1, 0, bytes_of(payload));
      EXPECT_EQ(t.stats().bytes_sent, 80u);
      EXPECT_EQ(t.stats().messages_sent, 2u);
    } else {
      t.irecv(0, 0, std::as_writable_bytes(std::span(payload)))->wait(kWait);
      t.irecv(0, 0, std::as_writable_bytes(std::span(payload)))->wait(kWait);
      EXPECT_EQ(t.stats().bytes_sent, 0u);
    }
  });
}

// f16 sums round each addition to nearest even (as MPI's user-defined fp16
// sum does); other f16 operations are refused.
TEST(TransportReduceTest, HalfPrecisionSumRoundsToNearestEven) {
  const auto half = [](float x) { return static_cast<_Float16>(x); };
  const std::vector<_Float16> a{half(1.0f), half(2048.0f), half(-0.5f), half(65504.0f)};
  const std::vector<_Float16> b{half(0.25f), half(1.0f), half(0.5f), half(-65504.0f)};
  std::vector<_Float16> acc = a;
  reduce_into(std::as_writable_bytes(std::span(acc)), std::as_bytes(std::span(b)), DataType::f16,
              ReduceOp::sum);
  EXPECT_EQ(static_cast<float>(acc[0]), 1.25f);
  EXPECT_EQ(static_cast<float>(acc[1]), 2048.0f);  // 2049 is a tie between 2048 and 2050: even
  EXPECT_EQ(static_cast<float>(acc[2]), 0.0f);
  EXPECT_EQ(static_cast<float>(acc[3]), 0.0f);
  EXPECT_THROW(reduce_into(std::as_writable_bytes(std::span(acc)), std::as_bytes(std::span(b)),
                           DataType::f16, ReduceOp::max),
               InvalidArgument);
  EXPECT_EQ(size_of(DataType::f16), 2u);
}

}  // namespace
}  // namespace qccl
