// Bad input across ranks ends in a clear error on every rank: mismatched
// calls, a rank that never arrives, corrupt chunks, bad local arguments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "../support/sparse_test_reduction.h"
#include "../support/world.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/broadcast.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

TEST(MismatchTest, DifferentLengthsNameTheFieldAndTheRanks) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(4, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> data(comm.rank() == 2 ? 999 : 1000, 1.0f);
    allreduce(comm, data, sum);
  });
  EXPECT_THAT(message, HasSubstr("element count"));
  EXPECT_THAT(message, HasSubstr("ranks {0,1,3} have 1000"));
  EXPECT_THAT(message, HasSubstr("ranks {2} have 999"));
}

TEST(MismatchTest, DifferentAlgorithms) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(3, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> data(10, 1.0f);
    CollectiveOptions o;
    o.algorithm = comm.rank() == 1 ? Algorithm::halving_doubling : Algorithm::ring;
    allreduce(comm, data, sum, o);
  });
  EXPECT_THAT(message, HasSubstr("'algorithm'"));
  EXPECT_THAT(message, HasSubstr("ranks {1}"));
}

TEST(MismatchTest, DifferentReductions) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    Fp32Sum sum;
    SparseTestReduction sparse;
    std::vector<float> data(16, 1.0f);
    allreduce(comm, data, comm.rank() == 0 ? static_cast<Reduction&>(sum) : sparse);
  });
  EXPECT_THAT(message, HasSubstr("'reduction'"));
  EXPECT_THAT(message, HasSubstr("fp32-sum"));
}

TEST(MismatchTest, DifferentOperations) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> data(16, 1.0f);
    if (comm.rank() == 0) {
      allreduce(comm, data, sum);
    } else {
      broadcast(comm, data, 0);
    }
  });
  EXPECT_THAT(message, HasSubstr("'operation'"));
}

TEST(MismatchTest, DifferentBroadcastRoots) {
  const std::string message = expect_throw_on_every_rank<MismatchError>(3, [](Communicator& comm) {
    std::vector<float> data(16, 1.0f);
    broadcast(comm, data, comm.rank() == 0 ? 0 : 1);
  });
  EXPECT_THAT(message, HasSubstr("'root'"));
}

TEST(MismatchTest, CommunicatorStaysUsableAfterAMismatch) {
  run_world(3, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> bad(comm.rank() == 0 ? 5 : 6, 1.0f);
    EXPECT_THROW(allreduce(comm, bad, sum), MismatchError);
    std::vector<float> good(6, 1.0f);
    allreduce(comm, good, sum);
    EXPECT_EQ(good, std::vector<float>(6, 3.0f));
  });
}

// Without the argument check, a length mismatch still fails cleanly: the
// short rank's chunks do not match the long rank's layout.
TEST(MismatchTest, UncheckedLengthMismatchFailsInsteadOfHanging) {
  CommunicatorOptions options{std::chrono::milliseconds(2000), false};
  std::atomic<int> failed{0};
  run_world(
      2,
      [&](Communicator& comm) {
        Fp32Sum sum;
        std::vector<float> data(comm.rank() == 0 ? 100 : 101, 1.0f);
        try {
          allreduce(comm, data, sum);
        } catch (const Error&) {
          ++failed;
        }
      },
      options);
  EXPECT_GE(failed.load(), 1);
}

TEST(TimeoutTest, MissingRankIsNamedAndCommunicatorIsPoisoned) {
  CommunicatorOptions options{std::chrono::milliseconds(300), true};
  std::string first, second;
  run_world(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) return;  // never enters the collective
        Fp32Sum sum;
        std::vector<float> data(8, 1.0f);
        try {
          allreduce(comm, data, sum);
        } catch (const TimeoutError& e) {
          first = e.what();
        }
        try {
          allreduce(comm, data, sum);
        } catch (const CommError& e) {
          second = e.what();
        }
      },
      options);
  EXPECT_THAT(first, HasSubstr("receive from rank 1 on rank 0"));
  EXPECT_THAT(first, HasSubstr("allreduce: the argument check"));
  EXPECT_THAT(second, HasSubstr("unusable"));
  EXPECT_THAT(second, HasSubstr("did not complete within 300 ms"));
}

TEST(TimeoutTest, UncheckedCallTimesOutNamingThePeerItWaitsFor) {
  CommunicatorOptions options{std::chrono::milliseconds(300), false};
  std::string message;
  run_world(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) return;
        Fp32Sum sum;
        std::vector<float> data(8, 1.0f);
        try {
          allreduce(comm, data, sum);
        } catch (const TimeoutError& e) {
          message = e.what();
        }
      },
      options);
  EXPECT_THAT(message, HasSubstr("ring allreduce"));
  EXPECT_THAT(message, HasSubstr("receive from rank 1"));
  EXPECT_THAT(message, HasSubstr("300 ms"));
}

// A rank that fails aborts the in-process world: the others stop at once
// rather than waiting out their (here 60 s) timeouts.
TEST(AbortTest, FailingRankReleasesItsPeersPromptly) {
  const auto start = Clock::now();
  CommunicatorOptions options{std::chrono::seconds(60), true};
  EXPECT_THROW(run_world(
                   3,
                   [](Communicator& comm) {
                     if (comm.rank() == 2) throw InvalidArgument("rank 2 gives up");
                     Fp32Sum sum;
                     std::vector<float> data(8, 1.0f);
                     allreduce(comm, data, sum);
                   },
                   options),
               InvalidArgument);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
}

// A rank whose encoder emits a truncated chunk: the receiver rejects it with
// a CommError instead of reading past its end or producing a wrong sum.
class TruncatingReduction final : public Reduction {
 public:
  explicit TruncatingReduction(bool truncate) : truncate_(truncate) {}
  std::string name() const override { return inner_.name(); }
  std::size_t granularity() const override { return inner_.granularity(); }
  std::size_t max_encoded_bytes(std::size_t n) const override { return inner_.max_encoded_bytes(n); }
  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    const std::size_t bytes = inner_.encode(in, first, out);
    return truncate_ && bytes >= 4 ? bytes - 4 : bytes;
  }
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    inner_.decode(in, first, out);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    inner_.decode_contribution(in, first, out);
  }
  std::size_t reduce(std::span<const std::byte> in, std::span<std::byte> acc, std::size_t bytes,
                     const ReduceContext& c) override {
    return inner_.reduce(in, acc, bytes, c);
  }

 private:
  SparseTestReduction inner_;
  bool truncate_;
};

TEST(CorruptDataTest, TruncatedChunkIsRejected) {
  std::atomic<int> comm_errors{0};
  try {
    run_world(3, [&](Communicator& comm) {
      TruncatingReduction reduction(comm.rank() == 1);
      std::vector<float> data(64, 1.0f);
      try {
        allreduce(comm, data, reduction);
      } catch (const CommError&) {
        ++comm_errors;
        throw;
      }
    });
  } catch (const CommError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::AnyOf(HasSubstr("does not hold"),
                                                        HasSubstr("aborted")));
  }
  EXPECT_GE(comm_errors.load(), 1);
}

TEST(ArgumentTest, LocalErrorsAreInvalidArgument) {
  run_world(1, [](Communicator& comm) {
    Fp32Sum sum;
    std::vector<float> a(10), b(11);
    EXPECT_THROW(allreduce(comm, a, b, sum), InvalidArgument);
    CollectiveOptions o;
    o.window = -1;  // 0 is automatic (receive_window.h)
    EXPECT_THROW(allreduce(comm, a, sum, o), InvalidArgument);
    std::vector<float> data(10);
    EXPECT_THROW(broadcast(comm, data, 3), InvalidArgument);
    // Overlapping but not identical input and output.
    std::vector<float> big(20);
    EXPECT_THROW(allreduce(comm, std::span<const float>(big).first(10),
                           std::span<float>(big).subspan(5, 10), sum),
                 InvalidArgument);
    SparseTestReduction sparse;
    CollectiveOptions native;
    native.algorithm = Algorithm::native;
    std::vector<float> s(8);
    EXPECT_THROW(allreduce(comm, s, sparse, native), InvalidArgument);
  });
}

}  // namespace
}  // namespace qccl::test
