// QSDP's quantizers (QSDP Definition 1, Lemma 5, §5.1–§5.2) as a
// specification: the random-shift lattice Q^w_δ is unbiased over the shift,
// each value's error uniform on ±δ/2, and moves every value of a bucket by
// the same shift; the shared dither on the fixed grid is unbiased with
// exactly Lemma 5's variance; bucketed stochastic rounding is unbiased with its exact
// two-point variance; learned levels are identical on every rank, equal the
// fit of every rank's values, and never worse than uniform levels on them;
// state resumes; bad specs are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/codecs/quantizers/minmax.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// Weight-like values: a bell around an offset, so min and max differ in sign.
std::vector<float> weights(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) {
    const float a = noise(rank + 21, i), b = noise(rank + 22, i);
    return 0.1f + 0.5f * (a + b) * std::fabs(a);
  });
}

MinMaxCodec& as_minmax(Codec& codec) { return dynamic_cast<MinMaxCodec&>(codec); }

// The decoded values of `rounds` steps of one rank.
std::vector<std::vector<float>> rounds_of(const std::string& spec, const std::vector<float>& v,
                                          int rounds) {
  std::vector<std::vector<float>> results;
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 13, .bucket = 0});
    for (int r = 0; r < rounds; ++r) {
      auto data = v;
      codec->allreduce_mean(comm, data);
      results.push_back(std::move(data));
    }
  });
  return results;
}

using Param = std::tuple<std::string, std::size_t>;  // spec, d
class MinMaxUnbiasedTest : public ::testing::TestWithParam<Param> {};

// Per element the mean over steps is v_i within 5 exact standard errors:
// for stochastic rounding and the shared dither a two-point variable,
// δ·√(f(1−f)/R) with f the value's fractional position in δ units (Lemma
// 5); for the shifted lattice an error uniform on [−δ/2, δ/2), δ/√(12R).
// The mean of ‖Q(v) − v‖² is Σδ²f(1 − f) (Lemma 5), resp. Σδ²/12, within 5
// standard errors over the independent steps (the values of one step are
// dependent under a shared draw, so the per-step spread is measured).
TEST_P(MinMaxUnbiasedTest, MeanIsTheInputWithTheRoundingsExactVariance) {
  const auto& [spec, d] = GetParam();
  constexpr int kRounds = 3000;
  const auto v = weights(0, d);
  const auto results = rounds_of(spec, v, kRounds);
  const auto& config = as_minmax(*make_codec(spec)).config();
  const bool lattice = config.rounding == MinMaxRounding::shift;
  const std::size_t size = config.bucket == 0 ? d : config.bucket;
  const double top = std::ldexp(1.0, config.bits) - 1;
  std::vector<double> means(d, 0.0);
  for (const auto& r : results) {
    for (std::size_t i = 0; i < d; ++i) means[i] += r[i] / static_cast<double>(kRounds);
  }
  double expected = 0;
  for (std::size_t first = 0; first < d; first += size) {
    const auto part = std::span<const float>(v).subspan(first, std::min(size, d - first));
    const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
    const double delta = (static_cast<double>(*hi) - *lo) / top;
    for (std::size_t k = 0; k < part.size(); ++k) {
      const double position = (part[k] - static_cast<double>(*lo)) / delta;
      const double f = position - std::floor(position);
      const double variance = delta * delta * (lattice ? 1.0 / 12 : f * (1 - f));
      expected += variance;
      EXPECT_NEAR(means[first + k], part[k],
                  5 * std::sqrt(variance / kRounds) + 1e-6 * std::fabs(part[k]) + 1e-7)
          << spec << ", element " << first + k;
    }
  }
  const SampleMean error = sample_mean(squared_errors(results, std::vector<double>(v.begin(), v.end())));
  EXPECT_NEAR(error.mean, expected, 5 * error.standard_error + 1e-9) << spec;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, MinMaxUnbiasedTest,
    ::testing::Values(Param{"minmax:bits=4,bucket=100,rounding=shift", 1000},
                      Param{"minmax:bits=8,bucket=0,rounding=shift", 300},
                      Param{"minmax:bits=4,bucket=100,rounding=dither", 1000},
                      Param{"minmax:bits=6,bucket=0,rounding=dither", 300},
                      Param{"minmax:bits=3,bucket=64", 500}, Param{"minmax:bits=8,bucket=1024", 2000}),
    [](const ::testing::TestParamInfo<Param>& info) { return test_name(std::get<0>(info.param)); });

// Q^w_δ is dependent across coordinates: in a bucket every value moves by
// the same shift, so any two decoded values differ by a whole number of δ.
// The shared dither keeps values on the bucket's fixed grid min + δZ.
TEST(MinMaxCodecTest, TheSharedDitherStaysOnTheFixedGrid) {
  const auto v = weights(2, 512);
  const auto results = rounds_of("minmax:bits=4,bucket=128,rounding=dither", v, 20);
  for (const auto& r : results) {
    for (std::size_t first = 0; first < v.size(); first += 128) {
      const auto part = std::span<const float>(v).subspan(first, 128);
      const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
      const double delta = (static_cast<double>(*hi) - *lo) / 15;
      for (std::size_t k = 0; k < 128; ++k) {
        const double steps = (static_cast<double>(r[first + k]) - *lo) / delta;
        EXPECT_NEAR(steps, std::nearbyint(steps), 1e-4);
      }
    }
  }
}

TEST(MinMaxCodecTest, TheShiftedLatticeMovesABucketTogether) {
  const auto v = weights(1, 512);
  const auto results = rounds_of("minmax:bits=4,bucket=128,rounding=shift", v, 20);
  for (const auto& r : results) {
    for (std::size_t first = 0; first < v.size(); first += 128) {
      const auto part = std::span<const float>(v).subspan(first, 128);
      const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
      const double delta = (static_cast<double>(*hi) - *lo) / 15;
      double spread = 0;
      for (std::size_t k = 1; k < 128; ++k) {
        const double steps = (static_cast<double>(r[first + k]) - r[first]) / delta;
        spread = std::max(spread, std::fabs(steps - std::nearbyint(steps)));
      }
      EXPECT_LT(spread, 1e-4);  // fp32 decoding only
    }
  }
}

// Learned levels (§5.2): after the refit step they are the same on every
// rank, equal the fit of every rank's statistics added in rank order, and
// their variance on those values is below the uniform levels'.
TEST(MinMaxCodecTest, LearnedLevelsAreIdenticalEverywhereAndNeverWorse) {
  for (int ranks : {2, 3, 4}) {
    const std::string spec = "minmax:bits=3,bucket=256,levels=learned,refit=2";
    std::vector<std::vector<double>> levels(static_cast<std::size_t>(ranks));
    run_world(ranks, [&](Communicator& comm) {
      auto codec = make_codec(spec, {.seed = 2, .bucket = 4});
      for (int step = 0; step < 3; ++step) {  // uniform at 0 and 1, fitted at 2
        auto data = weights(comm.rank(), 2048);
        codec->allreduce_mean(comm, data);
        EXPECT_EQ(as_minmax(*codec).refitted(), step == 2);
      }
      const auto l = as_minmax(*codec).levels();
      levels[static_cast<std::size_t>(comm.rank())].assign(l.begin(), l.end());
    });
    const auto uniform = uniform_levels(6);
    LevelStatistics central(uniform, 4096);
    for (int r = 0; r < ranks; ++r) {
      LevelStatistics one(uniform, 4096);
      const auto v = weights(r, 2048);
      for (std::size_t first = 0; first < v.size(); first += 256) {
        const auto part = std::span<const float>(v).subspan(first, 256);
        const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
        const double range = static_cast<double>(*hi) - *lo;
        for (float x : part) one.add_coordinate(std::clamp((x - static_cast<double>(*lo)) / range, 0.0, 1.0), range * range);
      }
      central.add_occupied_cells(one.occupied_cells());
    }
    const auto expected = central.fit_levels(uniform);
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(levels[static_cast<std::size_t>(r)], expected);
    EXPECT_LT(central.variance(expected), 0.9 * central.variance(uniform)) << ranks << " ranks";
  }
}

TEST(MinMaxCodecTest, LearnedLevelsResumeBitForBit) {
  const std::string spec = "minmax:bits=4,bucket=128,levels=learned,refit=1";
  run_world(2, [&](Communicator& comm) {
    auto a = make_codec(spec, {.seed = 3, .bucket = 0});
    auto b = make_codec(spec, {.seed = 3, .bucket = 0});
    for (int step = 0; step < 3; ++step) {
      auto data = weights(comm.rank() + step, 1000);
      a->allreduce_mean(comm, data);
    }
    b->load_state(a->save_state());
    b->set_step(a->step());
    for (int step = 3; step < 6; ++step) {  // a refit at step 4 on the way
      auto x = weights(comm.rank() + step, 1000), y = x;
      a->allreduce_mean(comm, x);
      b->allreduce_mean(comm, y);
      EXPECT_EQ(x, y) << "step " << step;
    }
  });
}

TEST(MinMaxCodecTest, RefusesBadSpecsByName) {
  for (const char* spec : {"minmax:bits=9", "minmax:bits=1", "minmax:rounding=floor",
                           "minmax:levels=learned,rounding=dither", "minmax:levels=learned,fit=lloyd",
                           "minmax:levels=learned,schedule=never", "minmax:bucket=0.5",
                           "minmax:refit=0", "minmax:norm=2"}) {
    EXPECT_THROW(make_codec(spec), InvalidArgument) << spec;
  }
  EXPECT_EQ(make_codec("minmax")->spec(), "minmax:bits=8,bucket=1024,rounding=stochastic,levels=uniform");
  EXPECT_EQ(make_codec("minmax:bits=4,bucket=100")->wire_bytes(1000), 10 * 8 + 500u);
}

}  // namespace
}  // namespace qccl::test
