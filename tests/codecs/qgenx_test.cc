// Q-GenX's quantizer (Q-GenX Definition 1, Eq. 3.1, Theorem 1, §3.3,
// Theorem 2, Appendix K) as a specification: unbiased with exactly Eq.
// (3.1)'s variance, within Theorem 1's bound, for every norm and level
// family; QAda never worse than the levels it starts from on the data it
// was fitted to, and identical on every rank; entropy coding lossless
// (the same decoded values as fixed width) and within Theorem 2's bound;
// state that saves and resumes exactly; bad specs refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/codecs/quantizers/qgenx.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// Heavy-tailed values (most near zero), where level placement matters.
std::vector<float> peaked(int rank, std::size_t d, float scale = 1.0f) {
  return make_vector(d, [&](std::size_t i) {
    const float x = noise(rank + 11, i);
    return scale * x * x * x;
  });
}

QGenXCodec& as_qgenx(Codec& codec) { return dynamic_cast<QGenXCodec&>(codec); }

TEST(QuantizationLevelsTest, FamiliesAndLookup) {
  EXPECT_EQ(uniform_levels(2), (std::vector<double>{0, 1.0 / 3, 2.0 / 3, 1}));
  EXPECT_EQ(exponential_levels(3), (std::vector<double>{0, 0.125, 0.25, 0.5, 1}));
  EXPECT_THROW(check_levels(std::vector<double>{0, 0.5, 0.5, 1}), InvalidArgument);
  EXPECT_THROW(check_levels(std::vector<double>{0.1, 1}), InvalidArgument);
  const std::vector<double> levels{0, 0.001, 0.01, 0.3, 0.31, 0.9, 1};
  const LevelIndex index(levels);
  const CounterRng rng(1, 0, 0, 0, RngStream::data);
  for (std::size_t k = 0; k < 20000; ++k) {
    const double u = k < 7 ? levels[k] : std::pow(static_cast<double>(rng.uniform(k)), 3);
    std::size_t t = 0;
    while (t + 2 < levels.size() && levels[t + 1] <= u) ++t;
    ASSERT_EQ(index.lower(u), t) << u;
    // The coin: the smallest draw rounds up unless u is a level, the
    // largest rounds down unless ξ rounds to 1.
    const double xi = (u - levels[t]) / (levels[t + 1] - levels[t]);
    ASSERT_EQ(index.round(u, 0), xi > 0 ? t + 1 : t) << u;
    if (xi < 0.5) {
      ASSERT_EQ(index.round(u, (std::uint64_t{1} << 53) - 1), t) << u;
    }
  }
}

TEST(QuantizationLevelsTest, TheoremOneFactorIsContinuousAtTheThreshold) {
  const auto levels = uniform_levels(6);  // ℓ_1 = 1/7, d_th = 14² = 196 for q = 2
  const double below = theorem1_variance_factor(levels, 196, 2);
  const double above = theorem1_variance_factor(levels, 197, 2);
  EXPECT_NEAR(below, above, 0.01);
  // ℓ̄ = 2 for the interior 1/7..6/7 (2/7 over 1/7): (2 + 1/2)/4 − 1/2 = 1/8.
  EXPECT_NEAR(theorem1_variance_factor(levels, 1, 2), 0.125 + 0.25 / 49, 1e-12);
}

using UnbiasedParam = std::tuple<std::string, std::size_t>;  // spec, d
class QGenXUnbiasedTest : public ::testing::TestWithParam<UnbiasedParam> {};

// One rank, many steps (fresh randomness each): the mean of Q(v) is v at
// 5σ, and the mean of ‖Q(v) − v‖² is Eq. (3.1)'s value within 5 of its
// exact standard deviations (each coordinate's squared error is a two-point
// variable), and below Theorem 1's bound.
TEST_P(QGenXUnbiasedTest, MeanIsTheInputAndVarianceIsEquationThreeOne) {
  const auto& [spec, d] = GetParam();
  constexpr int kRounds = 3000;
  const auto v = peaked(0, d, 3.0f);
  const std::vector<double> exact(v.begin(), v.end());
  std::vector<std::vector<float>> results;
  std::vector<double> levels;
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 5, .bucket = 0});
    for (int r = 0; r < kRounds; ++r) {
      auto data = v;
      codec->allreduce_mean(comm, data);
      results.push_back(std::move(data));
    }
    const auto l = as_qgenx(*codec).levels();
    levels.assign(l.begin(), l.end());
  });
  const auto& config = as_qgenx(*make_codec(spec)).config();
  // Per element, the mean of the two-point variable {ℓ_τ, ℓ_τ+1}·‖v‖ is
  // v_i, within 5 of its exact standard errors (plus fp32 decoding), and
  // so is the sum of the errors of the means; Eq. (3.1) and the exact
  // variance of the squared error, bucket by bucket.
  std::vector<double> means(d, 0.0);
  for (const auto& result : results) {
    for (std::size_t i = 0; i < d; ++i) means[i] += result[i] / static_cast<double>(kRounds);
  }
  const LevelIndex index(levels);
  const std::size_t size = config.bucket == 0 ? d : config.bucket;
  double expected = 0, variance = 0, squared_norm = 0, drift = 0, drift_variance = 0;
  for (std::size_t first = 0; first < d; first += size) {
    const auto part = std::span<const float>(v).subspan(first, std::min(size, d - first));
    const double norm = lq_norm(part, config.norm);
    for (std::size_t k = 0; k < part.size(); ++k) {
      const double x = part[k];
      squared_norm += x * x;
      const double u = std::fabs(x) / norm;
      const std::size_t t = index.lower(u);
      const double a = levels[t], b = levels[t + 1], xi = (u - a) / (b - a);
      const double down = (u - a) * (u - a) * norm * norm, up = (b - u) * (b - u) * norm * norm;
      expected += (1 - xi) * down + xi * up;
      variance += xi * (1 - xi) * (up - down) * (up - down);
      const double element_variance = (b - a) * (b - a) * norm * norm * xi * (1 - xi) / kRounds;
      const double rounding = 1e-6 * std::fabs(x) + 1e-30;
      EXPECT_NEAR(means[first + k], x, 5 * std::sqrt(element_variance) + rounding)
          << spec << ", element " << first + k;
      drift += means[first + k] - x;
      drift_variance += element_variance;
    }
  }
  EXPECT_LE(std::fabs(drift), 5 * std::sqrt(drift_variance) + 1e-6 * std::sqrt(squared_norm * d))
      << spec;
  const SampleMean error = sample_mean(squared_errors(results, exact));
  EXPECT_NEAR(error.mean, expected, 5 * std::sqrt(variance / kRounds)) << spec;
  EXPECT_NEAR(expected, quantization_variance(v, levels, config.bucket, config.norm),
              1e-9 * expected);
  const auto bound = make_codec(spec)->variance_bound(squared_norm, d, 1, Algorithm::ring);
  ASSERT_TRUE(bound.has_value());
  EXPECT_LE(error.mean, *bound + 5 * error.standard_error) << spec;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, QGenXUnbiasedTest,
    ::testing::Values(UnbiasedParam{"qgenx:bits=4,norm=2,bucket=0", 300},
                      UnbiasedParam{"qgenx:bits=3,levels=exp,norm=1,bucket=0", 257},
                      UnbiasedParam{"qgenx:bits=8,norm=inf,bucket=64", 1000},
                      UnbiasedParam{"qgenx:bits=4,levels=qada,norm=2,bucket=100,refit=1000", 1000},
                      UnbiasedParam{"qgenx:bits=2,norm=3,bucket=0,coding=elias", 101},
                      UnbiasedParam{"qgenx:bits=5,levels=qada,coding=huffman,bucket=0", 500}),
    [](const ::testing::TestParamInfo<UnbiasedParam>& info) {
      return test_name(std::get<0>(info.param));
    });

// The statistics' objective is Eq. (3.1) on the data itself, and the fit
// lowers it.
TEST(LevelStatisticsTest, ObjectiveIsTheDataVarianceAndTheFitLowersIt) {
  for (const auto& [bits, q, bucket] :
       {std::tuple{3, 2, std::size_t{0}}, std::tuple{4, 2, std::size_t{256}},
        std::tuple{4, 0, std::size_t{1024}}, std::tuple{6, 1, std::size_t{0}}}) {
    const auto start = uniform_levels((1 << (bits - 1)) - 2);
    LevelStatistics stats(start);
    std::vector<float> all;
    for (int r = 0; r < 3; ++r) {
      const auto v = peaked(r, 4096, 1.0f + r);
      stats.add(v, bucket, q);
      const double direct = quantization_variance(v, start, bucket, q);
      EXPECT_GT(direct, 0);
      all.insert(all.end(), v.begin(), v.end());
    }
    double direct = 0;
    for (int r = 0; r < 3; ++r) {
      direct += quantization_variance(std::span<const float>(all).subspan(4096 * r, 4096), start,
                                      bucket, q);
    }
    EXPECT_NEAR(stats.variance(start), direct, 1e-9 * direct);
    // What ranks exchange, the occupied cells, adds up to the same sums.
    LevelStatistics rebuilt(start);
    rebuilt.add_occupied_cells(stats.occupied_cells());
    EXPECT_EQ(rebuilt.sums(), stats.sums());
    EXPECT_LE(stats.occupied_cells().size(), 6 * all.size());
    EXPECT_THROW(rebuilt.add_occupied_cells(std::vector<double>{1e9, 0, 0, 0, 0, 0}), InvalidArgument);
    const auto fitted = stats.fit_levels(start);
    check_levels(fitted);
    double fitted_direct = 0;
    for (int r = 0; r < 3; ++r) {
      fitted_direct += quantization_variance(std::span<const float>(all).subspan(4096 * r, 4096),
                                             fitted, bucket, q);
    }
    EXPECT_NEAR(stats.variance(fitted), fitted_direct, 1e-9 * fitted_direct);
    // Peaked data: the fitted levels crowd near zero and cut the variance
    // (by 13% to over half in these cases).
    EXPECT_LT(fitted_direct, 0.9 * direct) << bits << " bits, q " << q;
    const auto p = stats.symbol_probabilities(fitted);
    double total = 0;
    for (double x : p) total += x;
    EXPECT_NEAR(total, 1.0, 1e-12);
  }
}

// On K ranks with different data, QAda's levels after the refit step are the
// same on every rank and equal the fit of every rank's statistics added in
// rank order; their measured variance on that data is no worse than the
// uniform levels'.
TEST(QGenXCodecTest, AdaptiveLevelsAreIdenticalEverywhereAndNeverWorse) {
  for (int ranks : {2, 3, 4}) {
    constexpr std::size_t kD = 3000;
    const std::string spec = "qgenx:bits=4,levels=qada,norm=2,bucket=500";
    std::vector<std::vector<double>> levels(static_cast<std::size_t>(ranks));
    run_world(ranks, [&](Communicator& comm) {
      auto codec = make_codec(spec, {.seed = 9, .bucket = 2});
      auto data = peaked(comm.rank(), kD, 1.0f + comm.rank());
      codec->allreduce_mean(comm, data);
      const auto l = as_qgenx(*codec).levels();
      levels[static_cast<std::size_t>(comm.rank())].assign(l.begin(), l.end());
      EXPECT_TRUE(as_qgenx(*codec).last_report().refitted);
    });
    const auto start = uniform_levels(6);
    LevelStatistics central(start);
    double uniform_variance = 0, fitted_variance = 0;
    for (int r = 0; r < ranks; ++r) {
      LevelStatistics one(start);
      one.add(peaked(r, kD, 1.0f + r), 500, 2);
      central.add_occupied_cells(one.occupied_cells());
    }
    const auto expected = central.fit_levels(start);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(levels[static_cast<std::size_t>(r)], expected) << "rank " << r << " of " << ranks;
      uniform_variance += quantization_variance(peaked(r, kD, 1.0f + r), start, 500, 2);
      fitted_variance += quantization_variance(peaked(r, kD, 1.0f + r), expected, 500, 2);
    }
    EXPECT_LT(fitted_variance, uniform_variance);
  }
}

// Entropy coding is lossless: the same seed gives the same symbols, so
// Huffman and Elias decode to exactly what fixed width decodes to; and
// each step's bits stay within Theorem 2's bound with the step's own
// symbol frequencies.
TEST(QGenXCodecTest, EntropyCodingIsLosslessAndWithinTheoremTwo) {
  for (const char* base : {"qgenx:bits=4,levels=qada,norm=2,bucket=0",
                           "qgenx:bits=8,levels=uniform,norm=inf,bucket=1024",
                           "qgenx:bits=3,levels=exp,norm=2,bucket=256"}) {
    std::vector<float> fixed_result;
    std::uint64_t fixed_bits = 0;
    for (const char* coding : {"fixed", "huffman", "elias"}) {
      const std::string spec = std::string(base) + ",coding=" + coding;
      run_world(3, [&](Communicator& comm) {
        auto codec = make_codec(spec, {.seed = 4, .bucket = 1});
        std::vector<float> data;
        for (int step = 0; step < 2; ++step) {
          data = peaked(comm.rank(), 1 << 15);
          codec->allreduce_mean(comm, data);
        }
        const auto& report = as_qgenx(*codec).last_report();
        EXPECT_EQ(report.coordinates, std::size_t{1} << 15);
        if (comm.rank() != 0) return;
        if (std::string(coding) == "fixed") {
          fixed_result = data;
          fixed_bits = report.bits;
          return;
        }
        EXPECT_EQ(data, fixed_result) << spec;
        // Elias codes of 128 levels run longer than 8 bits: those chunks
        // fall back to fixed width, never longer.
        EXPECT_LE(report.bits, fixed_bits) << spec;
        if (std::string(coding) == "huffman") {
          EXPECT_LT(report.bits, fixed_bits) << spec;
          EXPECT_LE(static_cast<double>(report.bits), report.bound_bits) << spec;
        }
      });
    }
  }
}

TEST(QGenXCodecTest, SavedStateResumesBitForBit) {
  const std::string spec = "qgenx:bits=4,levels=qada,coding=huffman,norm=2,bucket=128,refit=3";
  run_world(2, [&](Communicator& comm) {
    auto a = make_codec(spec, {.seed = 3, .bucket = 0});
    auto b = make_codec(spec, {.seed = 3, .bucket = 0});
    for (int step = 0; step < 4; ++step) {
      auto data = peaked(comm.rank() + step, 2000);
      a->allreduce_mean(comm, data);
    }
    b->load_state(a->save_state());
    b->set_step(a->step());
    EXPECT_EQ(std::vector<double>(as_qgenx(*b).levels().begin(), as_qgenx(*b).levels().end()),
              std::vector<double>(as_qgenx(*a).levels().begin(), as_qgenx(*a).levels().end()));
    for (int step = 4; step < 8; ++step) {  // a refit at step 6 on the way
      auto x = peaked(comm.rank() + step, 2000), y = x;
      a->allreduce_mean(comm, x);
      b->allreduce_mean(comm, y);
      EXPECT_EQ(x, y) << "step " << step;
    }
    EXPECT_THROW(b->load_state(std::vector<std::byte>(24)), InvalidArgument);
  });
}

// Appendix K's fallback: before any refit has estimated the level
// probabilities (a codec resumed at step 5 without state), Huffman coding
// sends exactly what Elias coding sends.
TEST(QGenXCodecTest, HuffmanWithoutAnEstimateCodesAsElias) {
  run_world(2, [&](Communicator& comm) {
    auto huffman = make_codec("qgenx:bits=4,coding=huffman,refit=100", {.seed = 8, .bucket = 0});
    auto elias = make_codec("qgenx:bits=4,coding=elias,refit=100", {.seed = 8, .bucket = 0});
    huffman->set_step(5);
    elias->set_step(5);
    auto x = peaked(comm.rank(), 5000), y = x;
    huffman->allreduce_mean(comm, x);
    elias->allreduce_mean(comm, y);
    EXPECT_EQ(x, y);
    EXPECT_TRUE(as_qgenx(*huffman).estimated_probabilities().empty());
    EXPECT_EQ(as_qgenx(*huffman).last_report().bits, as_qgenx(*elias).last_report().bits);
    EXPECT_FALSE(as_qgenx(*huffman).last_report().refitted);
  });
}

TEST(QGenXCodecTest, RefusesBadSpecsByName) {
  for (const char* spec : {"qgenx:bits=9", "qgenx:bits=1", "qgenx:bits=4.5", "qgenx:levels=log",
                           "qgenx:norm=0", "qgenx:bucket=-1", "qgenx:bucket=2.5",
                           "qgenx:coding=zip", "qgenx:refit=0", "qgenx:size=3"}) {
    EXPECT_THROW(make_codec(spec), InvalidArgument) << spec;
  }
  EXPECT_EQ(make_codec("qgenx")->spec(),
            "qgenx:bits=8,levels=uniform,norm=inf,bucket=1024,coding=fixed,refit=100");
  EXPECT_EQ(make_codec("qgenx:bits=4,bucket=100")->wire_bytes(1000), 1 + 8 * 10 + 500u);
}

}  // namespace
}  // namespace qccl::test
