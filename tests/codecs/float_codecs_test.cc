#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

TEST(Fp32CodecTest, ExactMeanWithEveryAlgorithm) {
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
    run_world(5, [&](Communicator& comm) {
      auto codec = make_codec("fp32");
      auto data = make_vector(1000, [&](std::size_t i) { return pattern(comm.rank(), i); });
      CollectiveOptions options;
      options.algorithm = algorithm;
      codec->allreduce_mean(comm, data, options);
      for (std::size_t i = 0; i < data.size(); ++i) {
        ASSERT_EQ(data[i], pattern_sum(5, i) / 5.0f) << to_string(algorithm) << " element " << i;
      }
      EXPECT_EQ(codec->step(), 1u);
    });
  }
}

// Each fp16 rounding of a partial sum errs by at most 2^-11 of its magnitude;
// with n-1 sums plus n initial roundings, |error| <= (2n-1) 2^-11 sum|x_r|/n.
TEST(Fp16CodecTest, MeanWithinTheRoundingBoundAndIdenticalEverywhere) {
  for (int n : {2, 3, 7}) {
    // native: MPI_Allreduce (here the in-process transport's) over the fp16
    // encodings with the transport's f16 sum.
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
      run_world(n, [&](Communicator& comm) {
        auto codec = make_codec("fp16");
        auto data = make_vector(3000, [&](std::size_t i) { return 100.0f * noise(comm.rank(), i); });
        CollectiveOptions options;
        options.algorithm = algorithm;
        codec->allreduce_mean(comm, data, options);
        for (std::size_t i = 0; i < data.size(); ++i) {
          double exact = 0, magnitude = 0;
          for (int r = 0; r < n; ++r) {
            exact += 100.0 * noise(r, i) / n;
            magnitude += std::abs(100.0 * noise(r, i)) / n;
          }
          ASSERT_LE(std::abs(data[i] - exact), (2 * n - 1) * std::ldexp(1.0, -11) * magnitude + 1e-7)
              << n << " ranks, element " << i;
        }
        expect_identical_across_ranks(comm, data);
      });
    }
  }
}

TEST(Fp16CodecTest, ValuesBeyondTheFp16RangeAreRefusedOnEveryRank) {
  const auto message = expect_throw_on_every_rank<InvalidArgument>(2, [](Communicator& comm) {
    std::vector<float> data(8, 1.0f);
    if (comm.rank() == 1) data[3] = 200000.0f;  // /2 = 100000 > 65504
    make_codec("fp16")->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, ::testing::HasSubstr("65504"));
}

TEST(Fp32CodecTest, InfinityIsRaisedOnEveryRank) {
  const auto message = expect_throw_on_every_rank<InvalidArgument>(3, [](Communicator& comm) {
    std::vector<float> data(8, 1.0f);
    if (comm.rank() == 0) data[0] = INFINITY;
    make_codec("fp32")->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, ::testing::HasSubstr("rank(s) 0"));
}

}  // namespace
}  // namespace qccl::test

namespace qccl::test {
namespace {

// Every codec with lengths 0, 1 and 3 (fewer elements than ranks, odd for
// packed 4-bit): no error, identical results, each element within the
// codec's worst-case error of the exact mean.
TEST(CodecLengthsTest, EmptyAndTinyVectorsWorkForEveryCodec) {
  for (const char* spec : {"fp32", "fp16", "global-qsgd", "global-qsgd:bits=4", "global-qsgd:dither=exp",
                           "global-qsgd:sparse=auto", "qsgd", "qsgd:bits=4"}) {
    for (std::size_t d : {0, 1, 3}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        run_world(5, [&](Communicator& comm) {
          auto codec = make_codec(spec);
          auto data = make_vector(d, [&](std::size_t i) { return pattern(comm.rank(), i); });
          CollectiveOptions options;
          options.algorithm = algorithm;
          codec->allreduce_mean(comm, data, options);
          ASSERT_EQ(data.size(), d);
          expect_identical_across_ranks(comm, data);
          double inf = 0, squares = 0;
          for (int r = 0; r < comm.size(); ++r) {
            for (std::size_t i = 0; i < d; ++i) {
              inf = std::max(inf, std::abs(static_cast<double>(pattern(r, i))));
              squares += static_cast<double>(pattern(r, i)) * pattern(r, i);
            }
          }
          const double norm = codec->norm_kind() == NormKind::inf ? inf : std::sqrt(squares);
          const double bound = codec->max_abs_error(norm, comm.size(), algorithm);
          for (std::size_t i = 0; i < d; ++i) {
            EXPECT_LE(std::abs(data[i] - pattern_sum(5, i) / 5.0), bound) << spec << " d=" << d;
          }
        });
      }
    }
  }
}

}  // namespace
}  // namespace qccl::test
