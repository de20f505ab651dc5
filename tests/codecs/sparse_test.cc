// Global-QSGD's sparse aggregation (Algorithm 1, lines 6-8): chosen only when
// it sends less, bitwise equal to the dense result for linear dithering,
// unbiased for exponential dithering.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/patterns.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// About 1% non-zero, at different places on each rank.
std::vector<float> sparse_input(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) {
    return (i * 7 + static_cast<std::size_t>(rank) * 13) % 97 == 0 ? noise(rank, i) : 0.0f;
  });
}

struct Outcome {
  std::vector<float> result;
  std::uint64_t bytes_sent = 0;  // rank 0
};

Outcome run(const std::string& spec, int n, Algorithm algorithm,
            const std::function<std::vector<float>(int)>& input) {
  Outcome outcome;
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 21, .bucket = 4});
    CollectiveOptions options;
    options.algorithm = algorithm;
    auto data = input(comm.rank());
    const auto before = comm.data_bytes_sent();
    codec->allreduce_mean(comm, data, options);
    expect_identical_across_ranks(comm, data);
    if (comm.rank() == 0) {
      outcome.result = data;
      outcome.bytes_sent = comm.data_bytes_sent() - before;
    }
  });
  return outcome;
}

TEST(SparseTest, LinearSparseEqualsDenseBitForBitAndSendsLess) {
  constexpr std::size_t kD = 20000;
  for (int n : {2, 3, 5}) {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
      auto input = [&](int r) { return sparse_input(r, kD); };
      const auto dense = run("global-qsgd", n, algorithm, input);
      const auto sparse = run("global-qsgd:sparse=auto", n, algorithm, input);
      EXPECT_EQ(sparse.result, dense.result) << n << " ranks " << to_string(algorithm);
      // A rank sends at most all n ranks' entries, 5 bytes for ~d/97 each:
      // 5nd/97 < d/3 for n <= 5, while dense sends at least d from rank 0
      // (2(n-1)/n·d on the ring, the whole vector when halving-doubling folds it).
      EXPECT_LT(sparse.bytes_sent * 3, dense.bytes_sent) << n << " ranks " << to_string(algorithm);
    }
  }
}

TEST(SparseTest, DenseInputKeepsTheDenseAllreduce) {
  auto input = [](int r) { return make_vector(5000, [&](std::size_t i) { return noise(r, i); }); };
  const auto dense = run("global-qsgd", 4, Algorithm::ring, input);
  const auto automatic = run("global-qsgd:sparse=auto", 4, Algorithm::ring, input);
  EXPECT_EQ(automatic.result, dense.result);
  EXPECT_EQ(automatic.bytes_sent, dense.bytes_sent);
}

TEST(SparseTest, ExponentialDenseOnSparseInputIsUnbiased) {
  for (int n : {2, 3, 5}) {
    expect_unbiased_end_to_end("global-qsgd:dither=exp", n, Algorithm::ring,
                               [](int r) { return sparse_input(r, 400); }, 2000);
  }
}

TEST(SparseTest, ExponentialSparseIsUnbiased) {
  for (int n : {2, 3, 5}) {
    expect_unbiased_end_to_end("global-qsgd:dither=exp,sparse=auto", n, Algorithm::ring,
                               [](int r) { return sparse_input(r, 400); }, 2000);
  }
}

// Beyond 127 ranks 8-bit linear codes carry a chunk header (averaging mode):
// the sparse option then keeps the dense allreduce, with the same result.
TEST(SparseTest, BeyondOneHundredTwentySevenRanksFallsBackToDense) {
  // A single non-zero in all: sparse would be chosen if it were allowed.
  auto input = [](int r) {
    std::vector<float> v(1000, 0.0f);
    if (r == 0) v[5] = 1.0f;
    return v;
  };
  const auto dense = run("global-qsgd", 130, Algorithm::ring, input);
  const auto automatic = run("global-qsgd:sparse=auto", 130, Algorithm::ring, input);
  EXPECT_EQ(automatic.result, dense.result);
  EXPECT_EQ(automatic.bytes_sent, dense.bytes_sent);
}

// 4-bit: each rank's own 7-level codes summed exactly, unbiased, sending
// less than the dense 4-bit allreduce.
TEST(SparseTest, FourBitSparseIsUnbiasedAndSendsLess) {
  for (int n : {2, 3, 5}) {
    expect_unbiased_end_to_end("global-qsgd:bits=4,sparse=auto", n, Algorithm::ring,
                               [](int r) { return sparse_input(r, 400); }, 2000);
  }
  auto input = [](int r) { return sparse_input(r, 20000); };
  const auto dense = run("global-qsgd:bits=4", 3, Algorithm::ring, input);
  const auto sparse = run("global-qsgd:bits=4,sparse=auto", 3, Algorithm::ring, input);
  EXPECT_LT(sparse.bytes_sent * 2, dense.bytes_sent);
}

}  // namespace
}  // namespace qccl::test
