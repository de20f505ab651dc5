// Learned levels of QSDP's quantizers (QSDP §5.2, Algorithm 2, Appendix C)
// as a specification: Algorithm 2's gradient steps lower the nearest-rounding
// error of a known distribution well below evenly spaced levels', on values
// they were not fitted to; every rank fits the same levels; learned levels
// on the random-shift lattice change only the levels (while still evenly
// spaced they decode as the lattice does), round to the nearest shifted
// level, and after a fit err less than the lattice; the paper's refit
// steps 400, 1900 and 3800 scale with `refit`.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/codecs/quantizers/levels_sgd.h"
#include "qccl/codecs/quantizers/minmax.h"
#include "qccl/codecs/quantizers/quantization_levels.h"
#include "qccl/codecs/registry/codec_registry.h"

namespace qccl::test {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Normal values (Box–Muller on the deterministic noise), as a layer's weights are.
std::vector<float> normal_values(int seed, std::size_t d) {
  return make_vector(d, [&](std::size_t i) {
    const double a = 0.5 * (noise(seed, i) + 1.0) + 1e-12, b = noise(seed + 100, i);
    return static_cast<float>(0.02 * std::sqrt(-2.0 * std::log(a)) * std::cos(kPi * b));
  });
}

// The min-max positions of v in buckets of `bucket`, weighted by range²,
// as MinMaxCodec's refit collects them.
LevelStatistics positions(std::span<const float> v, std::size_t bucket, std::span<const double> levels) {
  LevelStatistics s(levels, 4096);
  for (std::size_t first = 0; first < v.size(); first += bucket) {
    const auto part = v.subspan(first, std::min(bucket, v.size() - first));
    const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
    const double range = static_cast<double>(*hi) - *lo;
    for (float x : part) s.add_coordinate((x - static_cast<double>(*lo)) / range, range * range);
  }
  return s;
}

// Algorithm 2 on 64 buckets of normal values: at 4 bits the nearest-rounding
// error on 64 other buckets falls at least 20% below evenly spaced levels'
// (the optimum for a normal's 16 levels is about 38% below; ends pinned at
// each bucket's min and max cost a little of it); the levels stay ordered
// with the ends at 0 and 1.
TEST(LearnedLevelsSgd, LowersTheNearestRoundingErrorOfANormalDistribution) {
  const auto uniform = uniform_levels(14);
  const auto fitted_on = normal_values(1, 64 * 1024), held_out = normal_values(2, 64 * 1024);
  const auto train = positions(fitted_on, 1024, uniform);
  const CounterRng rng(7, 1, 0, 0, RngStream::shared);
  const auto learned = learn_levels_sgd(train, uniform, rng);
  ASSERT_EQ(learned.size(), uniform.size());
  EXPECT_NO_THROW(check_levels(learned));
  const auto test = positions(held_out, 1024, uniform);
  const double before = nearest_rounding_error(test, uniform), after = nearest_rounding_error(test, learned);
  EXPECT_LT(after, 0.8 * before) << "uniform " << before << ", learned " << after;
  // The levels crowd where a normal's values are: the middle gaps narrower than the outer ones.
  EXPECT_LT(learned[8] - learned[7], learned[1] - learned[0]);
}

// The codec with fit=sgd: every rank ends with the same levels, equal to
// Algorithm 2 run on every rank's statistics added in rank order.
TEST(LearnedLevelsSgd, EveryRankFitsTheSameLevels) {
  const int ranks = 3;
  std::vector<std::vector<double>> levels(ranks);
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec("minmax:bits=4,bucket=256,levels=learned,refit=1,fit=sgd", {.seed = 5, .bucket = 2});
    const auto data = normal_values(comm.rank() + 10, 4096);
    std::vector<float> gathered(4096 * ranks);
    for (int step = 0; step < 2; ++step) codec->allgather(comm, data, gathered);  // fitted at step 1
    const auto l = dynamic_cast<MinMaxCodec&>(*codec).levels();
    levels[static_cast<std::size_t>(comm.rank())].assign(l.begin(), l.end());
  });
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(levels[static_cast<std::size_t>(r)], levels[0]);
  EXPECT_NE(levels[0], uniform_levels(14));
}

// The decoded values of `steps` allgathers of v by one rank.
std::vector<std::vector<float>> decoded(const std::string& spec, const std::vector<float>& v, int steps) {
  std::vector<std::vector<float>> out;
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 13, .bucket = 0});
    for (int s = 0; s < steps; ++s) {
      std::vector<float> got(v.size());
      codec->allgather(comm, v, got);
      out.push_back(std::move(got));
    }
  });
  return out;
}

// Learned levels change only the levels: before their first fit (evenly
// spaced) the learned codec on the shifted lattice decodes what the
// lattice decodes, step after step, up to fp32 rounding.
TEST(LearnedLevelsOnTheShiftedLattice, AreTheLatticeWhileEvenlySpaced) {
  const auto v = normal_values(3, 2048);
  const auto lattice = decoded("minmax:bits=4,bucket=256,rounding=shift", v, 5);
  const auto learned = decoded("minmax:bits=4,bucket=256,rounding=shift,levels=learned,refit=100", v, 5);
  for (std::size_t s = 0; s < lattice.size(); ++s) {
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(learned[s][i], lattice[s][i], 1e-7) << s << " " << i;
  }
}

// After a fit (step 1), each value decodes to the nearest of the learned
// levels shifted by the step's shared ρ: so within half the widest gap of
// those levels, and over 40 steps the mean squared error of normal values
// falls below the lattice's δ²/12 per value.
TEST(LearnedLevelsOnTheShiftedLattice, RoundToTheNearestShiftedLevelAndErrLessAfterAFit) {
  const std::size_t bucket = 1024;
  const auto v = normal_values(4, 16 * 1024);
  const int steps = 40;
  const auto lattice = decoded("minmax:bits=4,bucket=1024,rounding=shift", v, steps);
  const auto learned = decoded("minmax:bits=4,bucket=1024,rounding=shift,levels=learned,refit=1,fit=sgd", v, steps);
  double lattice_error = 0, learned_error = 0;
  for (int s = 2; s < steps; ++s) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      lattice_error += std::pow(lattice[static_cast<std::size_t>(s)][i] - v[i], 2);
      learned_error += std::pow(learned[static_cast<std::size_t>(s)][i] - v[i], 2);
    }
    for (std::size_t first = 0; first < v.size(); first += bucket) {
      const auto part = std::span<const float>(v).subspan(first, bucket);
      const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
      const double range = static_cast<double>(*hi) - *lo;
      for (std::size_t i = first; i < first + bucket; ++i) {
        // Shifted levels' gaps are convex mixtures of the levels' own, each under 1/2.
        EXPECT_LE(std::fabs(learned[static_cast<std::size_t>(s)][i] - v[i]), 0.25 * range + 1e-6);
      }
    }
  }
  EXPECT_LT(learned_error, 0.85 * lattice_error) << "lattice " << lattice_error << ", learned " << learned_error;
}

// A step that runs twice (the sharded engine's forward and backward gathers
// of a block) fits once: both runs decode the same bits, with Algorithm 2's
// fit, which is no fixed point, too.
TEST(LearnedLevelsSgd, AStepRunTwiceFitsOnce) {
  const auto v = normal_values(6, 4096);
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("minmax:bits=4,bucket=1024,rounding=shift,levels=learned,refit=1,fit=sgd",
                            {.seed = 3, .bucket = 0});
    std::vector<float> first(v.size()), second(v.size());
    codec->set_step(1);
    codec->allgather(comm, v, first);
    const auto fitted = std::vector<double>(dynamic_cast<MinMaxCodec&>(*codec).levels().begin(),
                                            dynamic_cast<MinMaxCodec&>(*codec).levels().end());
    codec->set_step(1);
    codec->allgather(comm, v, second);
    EXPECT_EQ(first, second);
    const auto again = dynamic_cast<MinMaxCodec&>(*codec).levels();
    EXPECT_EQ(fitted, std::vector<double>(again.begin(), again.end()));
    EXPECT_NE(fitted, uniform_levels(14));
  });
}

// schedule=paper: the fits of QSDP §5.2 at steps 400, 1900 and 3800 of
// 4800, scaled by refit/400; schedule=doubling: refit·2^j.
TEST(LearnedLevelsSchedule, ThePapersStepsScaleWithRefit) {
  MinMaxConfig paper{.bits = 4, .learned = true, .refit = 40, .schedule = RefitSchedule::paper};
  std::vector<std::uint64_t> fits;
  for (std::uint64_t step = 0; step < 1000; ++step) {
    if (is_refit_step(paper, step)) fits.push_back(step);
  }
  EXPECT_EQ(fits, (std::vector<std::uint64_t>{40, 190, 380}));
  paper.refit = 400;
  EXPECT_TRUE(is_refit_step(paper, 1900) && is_refit_step(paper, 3800) && !is_refit_step(paper, 800));
  const MinMaxConfig doubling{.bits = 4, .learned = true, .refit = 40};
  EXPECT_TRUE(is_refit_step(doubling, 40) && is_refit_step(doubling, 80) && is_refit_step(doubling, 320));
  EXPECT_FALSE(is_refit_step(doubling, 120));
  EXPECT_EQ(make_codec("minmax:bits=4,levels=learned,refit=9,fit=sgd,schedule=paper,rounding=shift")->spec(),
            "minmax:bits=4,bucket=1024,rounding=shift,levels=learned,refit=9,fit=sgd,schedule=paper");
}

}  // namespace
}  // namespace qccl::test
