// PowerSGD's state across steps (Vogels et al. 2019): the error-feedback
// residual identity (Algorithm 2) bit for bit, warm start converging to the
// best rank-r approximation, error feedback keeping the accumulated results
// on the accumulated inputs, state that follows a tensor across bucket
// layouts, exact resume, the shared operation checks, non-finite input and
// ranks whose layouts differ.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "powersgd_layouts.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/low_rank/powersgd.h"
#include "qccl/codecs/low_rank/powersgd_math.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

double squared_distance(std::span<const float> a, std::span<const double> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

// Algorithm 2 (lines 7 and 9): each step compresses M = fl(g + e_old), own
// is this rank's decompressed part P̂·P̂ᵀ·M, and the residual kept is
// bitwise fl(M − own). The step is the ef=off codec's step on M, bit for
// bit (result and own): error feedback changes only what is compressed.
TEST(PowerSgdTest, ErrorFeedbackKeepsTheResidualExactly) {
  const TensorLayout layout = layout_of({{"w", {30, 20}}, {"b", {20}}, {"c", {12, 3, 3}}});
  run_world(3, [&](Communicator& comm) {
    auto store = std::make_shared<TensorStateStore>();
    auto codec = make_codec("powersgd", {.seed = 9, .bucket = 1});
    codec->set_layout(layout, store);
    auto twin = make_codec("powersgd:ef=off", {.seed = 9, .bucket = 1});
    twin->set_layout(layout);
    const auto tensors = layout.tensors(layout.total());
    auto residual = [&](std::size_t i) -> float {
      for (const TensorSlice& t : tensors) {
        if (i < t.offset || i >= t.offset + t.elements) continue;
        if (!powersgd_shape(t, PowerSgdConfig{}).compressed) return 0.0f;  // none kept
        return store->floats(t.name, kPowerSgdResidualField, t.elements)[i - t.offset];
      }
      return 0.0f;
    };
    for (int step = 0; step < 5; ++step) {
      const auto g = make_vector(layout.total(), [&](std::size_t i) {
        return noise(comm.rank() + 7 * step, i);
      });
      std::vector<float> m(g.size()), own(g.size()), twin_own(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) m[i] = g[i] + residual(i);
      auto data = g, twin_data = m;
      codec->allreduce_mean(comm, data, {}, own);
      twin->allreduce_mean(comm, twin_data, {}, twin_own);
      ASSERT_EQ(data, twin_data) << "step " << step << ": not the plain step on g + e";
      ASSERT_EQ(own, twin_own) << "step " << step;
      std::size_t broken = 0;
      for (const TensorSlice& t : tensors) {
        if (!powersgd_shape(t, PowerSgdConfig{}).compressed) continue;
        const auto e = store->floats(t.name, kPowerSgdResidualField, t.elements);
        for (std::size_t j = 0; j < t.elements; ++j) {
          const float kept = m[t.offset + j] - own[t.offset + j];
          broken += std::memcmp(&e[j], &kept, sizeof kept) != 0;
        }
      }
      ASSERT_EQ(broken, 0u) << "step " << step << ": residual is not M − own";
    }
  });
}

// M = U·diag(σ)·Vᵀ with known singular values. With warm start each step is
// one more power iteration on the same input (§3): the error never grows
// and reaches the best rank-r error, sqrt(Σ_{k>r} σ_k²) (Eckart–Young).
// Without it every step starts from a fresh Q, and stays worse.
TEST(PowerSgdTest, WarmStartConvergesToTheBestRankRApproximation) {
  const std::size_t n = 40, m = 30, r = 2;
  std::vector<float> u = make_vector(n * m, [](std::size_t i) { return noise(31, i); });
  std::vector<float> v = make_vector(m * m, [](std::size_t i) { return noise(32, i); });
  std::vector<double> work;
  powersgd::orthonormalise(u, m, n, work);  // m orthonormal columns of n
  powersgd::orthonormalise(v, m, m, work);
  std::vector<double> sigma(m);
  for (std::size_t k = 0; k < m; ++k) sigma[k] = 1.0 / (1.0 + 0.35 * double(k));
  std::vector<double> matrix(n * m, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < m; ++j) {
      for (std::size_t k = 0; k < m; ++k) matrix[i * m + j] += u[k * n + i] * sigma[k] * v[k * m + j];
    }
  }
  const std::vector<float> input(matrix.begin(), matrix.end());
  double best = 0;
  for (std::size_t k = r; k < m; ++k) best += sigma[k] * sigma[k];
  best = std::sqrt(best);
  auto errors = [&](const std::string& spec, int steps) {
    std::vector<double> out;
    run_world(2, [&](Communicator& comm) {  // both ranks hold M: the mean is M
      auto codec = make_codec(spec, {.seed = 6});
      codec->set_layout(layout_of({{"w", {40, 30}}}));
      for (int step = 0; step < steps; ++step) {
        auto data = input;
        codec->allreduce_mean(comm, data);
        std::vector<double> exact(input.begin(), input.end());
        if (comm.rank() == 0) out.push_back(std::sqrt(squared_distance(data, exact)));
      }
    });
    return out;
  };
  const auto warm = errors("powersgd:ef=off", 30);
  const auto cold = errors("powersgd:ef=off,warm_start=off", 30);
  EXPECT_EQ(warm[0], cold[0]) << "the first step draws the same Q";
  for (std::size_t t = 1; t < warm.size(); ++t) {
    EXPECT_LE(warm[t], warm[t - 1] * (1 + 1e-6)) << "step " << t;
  }
  EXPECT_LE(warm.back(), best * 1.001);
  EXPECT_GE(warm.back(), best * (1 - 1e-5));
  for (std::size_t t = 1; t < cold.size(); ++t) {
    EXPECT_NE(cold[t], cold[t - 1]) << "step " << t << " reused its Q";
    EXPECT_GT(cold[t], best * 1.01) << "step " << t;
  }
}

// With error feedback the results add up to the inputs: Σ_t result_t =
// Σ_t mean_i g_i,t − mean_i e_i,T, so their gap stays as small as one
// step's residual while the inputs keep a direction rank r cannot hold
// (a fixed full-rank part). Without it the gap grows with every step.
TEST(PowerSgdTest, ErrorFeedbackKeepsTheAccumulatedResultsOnTheInputs) {
  const TensorLayout layout = layout_of({{"w", {24, 16}}, {"b", {16}}});
  const std::size_t d = layout.total();
  constexpr int kSteps = 120;
  auto gaps = [&](const std::string& spec, std::vector<double>& residual_gap) {
    std::vector<double> out;
    run_world(3, [&](Communicator& comm) {
      auto store = std::make_shared<TensorStateStore>();
      auto codec = make_codec(spec, {.seed = 12});
      codec->set_layout(layout, store);
      std::vector<double> results(d, 0.0), inputs(d, 0.0);
      for (int step = 0; step < kSteps; ++step) {
        std::vector<double> mean(d, 0.0);
        auto g = make_vector(d, [&](std::size_t i) {
          return noise(77, i) + 0.3f * noise(comm.rank() + 3 * step, i);
        });
        for (std::size_t i = 0; i < d; ++i) mean[i] = g[i] / 3.0;
        allreduce_values<double>(comm.transport(), mean, ReduceOp::sum, kTestTimeout);
        codec->allreduce_mean(comm, g);
        double gap = 0;
        for (std::size_t i = 0; i < d; ++i) {
          results[i] += g[i];
          inputs[i] += mean[i];
          gap += (results[i] - inputs[i]) * (results[i] - inputs[i]);
        }
        if (comm.rank() == 0) out.push_back(std::sqrt(gap));
      }
      if (spec.find("ef=off") != std::string::npos) return;
      // The gap is minus the mean residual.
      std::vector<double> mean_residual(d, 0.0);
      const auto e = store->floats("w", kPowerSgdResidualField, 24 * 16);
      for (std::size_t i = 0; i < e.size(); ++i) mean_residual[i] = e[i] / 3.0;
      allreduce_values<double>(comm.transport(), mean_residual, ReduceOp::sum, kTestTimeout);
      double worst = 0;
      for (std::size_t i = 0; i < d; ++i) {
        worst = std::max(worst, std::abs(results[i] - inputs[i] + mean_residual[i]));
      }
      if (comm.rank() == 0) residual_gap.push_back(worst);
    });
    return out;
  };
  std::vector<double> identity;
  const auto with = gaps("powersgd:rank=1", identity);
  const auto without = gaps("powersgd:rank=1,ef=off", identity);
  ASSERT_EQ(identity.size(), 1u);
  EXPECT_LT(identity[0], 1e-4) << "Σ results ≠ Σ inputs − mean residual";
  const double early = *std::max_element(with.begin(), with.begin() + kSteps / 2);
  const double late = *std::max_element(with.begin() + kSteps / 2, with.end());
  EXPECT_LE(late, 1.5 * early) << "the gap with error feedback keeps growing";
  EXPECT_LT(late, without.back() / 4) << "error feedback does not help here";
  EXPECT_GT(without.back(), 1.8 * without[kSteps / 2 - 1]) << "without it the gap should grow";
}

// Q and the residual live under the tensor's name in a shared store, so a
// tensor moved into another bucket (a re-planned layout) carries on where
// it was. Two ranks: each sum has one order, so the bits must match.
TEST(PowerSgdTest, StateFollowsTheTensorAcrossBucketLayouts) {
  run_world(2, [&](Communicator& comm) {
    const TensorLayout both = layout_of({{"w", {30, 20}}, {"v", {20, 12}}});
    const TensorLayout w_alone = layout_of({{"w", {30, 20}}});
    auto store = std::make_shared<TensorStateStore>();
    auto whole = make_codec("powersgd", {.seed = 5, .bucket = 0});
    whole->set_layout(both);
    auto first = make_codec("powersgd", {.seed = 5, .bucket = 0});
    first->set_layout(both, store);
    auto input = [&](int step) {
      return make_vector(both.total(), [&](std::size_t i) { return noise(comm.rank() + 2 * step, i); });
    };
    std::vector<float> expected, moved;
    for (int step = 0; step < 3; ++step) {
      expected = input(step);
      whole->allreduce_mean(comm, expected);
      if (step < 2) {
        moved = input(step);
        first->allreduce_mean(comm, moved);
      }
    }
    auto second = make_codec("powersgd", {.seed = 5, .bucket = 7});  // another bucket
    second->set_layout(w_alone, store);
    second->set_step(2);
    moved = input(2);
    moved.resize(w_alone.total());
    second->allreduce_mean(comm, moved);
    expected.resize(w_alone.total());
    EXPECT_EQ(moved, expected);
  });
}

// --- the shared checks ---

// Without a layout the vector is one 1-D tensor: the fp32 mean, within its
// bound; reduce-scatter and allgather refused by name.
TEST(PowerSgdTest, PassesTheSharedOperationChecks) {
  for (int ranks : {1, 2, 3, 4, 7}) {
    run_world(ranks, [&](Communicator& comm) {
      for (const std::string spec : {"powersgd", "powersgd:rank=1,warm_start=off,ef=off"}) {
        for (CodecOperation operation : {CodecOperation::allreduce_mean,
                                         CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather}) {
          for (std::size_t count : {0, 1, 10, 1000, 100000}) {
            for (Algorithm algorithm :
                 {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
              check_codec_operation(comm, spec, operation, count, algorithm);
            }
          }
        }
      }
    });
  }
}

TEST(PowerSgdTest, ResumesExactlyFromItsSavedState) {
  const TensorLayout layout = mixed_layout();
  for (int ranks : {1, 3}) {
    run_world(ranks, [&](Communicator& comm) {
      check_codec_resumes_exactly(comm, "powersgd", layout);
      check_codec_resumes_exactly(comm, "powersgd:ef=off", layout);           // Q alone
      check_codec_resumes_exactly(comm, "powersgd:warm_start=off", layout);   // residuals alone
      check_codec_resumes_exactly(comm, "powersgd:warm_start=off,ef=off", layout, 6, false);
    });
  }
}

// Non-finite input on one rank: every rank raises NonFiniteError before
// anything moves; the codec and the communicator carry on. Finite input
// near fp32's largest value is no such input.
TEST(PowerSgdTest, NonFiniteInputStopsEveryRankAndNothingChanges) {
  const TensorLayout layout = layout_of({{"w", {20, 10}}});
  const auto message = expect_throw_on_every_rank<NonFiniteError>(3, [&](Communicator& comm) {
    auto codec = make_codec("powersgd");
    codec->set_layout(layout);
    auto data = make_vector(layout.total(), [&](std::size_t i) { return noise(comm.rank(), i); });
    if (comm.rank() == 1) data[17] = std::numeric_limits<float>::quiet_NaN();
    try {
      codec->allreduce_mean(comm, data);
    } catch (const NonFiniteError&) {
      EXPECT_EQ(codec->step(), 0u);
      auto fine = make_vector(layout.total(), [&](std::size_t i) { return noise(comm.rank(), i); });
      codec->allreduce_mean(comm, fine);
      expect_identical_across_ranks(comm, fine);
      throw;
    }
  });
  EXPECT_THAT(message, HasSubstr("powersgd"));
  // Finite inputs whose factors would overflow fp32 when summed (entries
  // near 3e38: an entry of M·Q or Mᵀ·P̂ reaches √10 times that): the power
  // step runs on M·2^-k instead. At full rank (rank = 10 of a 10×10 M) P̂ is
  // orthogonal and the result is the exact mean; at rank 2 it is finite.
  for (const std::string spec : {"powersgd:rank=64,min_rate=0", "powersgd"}) {
    run_world(2, [&](Communicator& comm) {
      const TensorLayout square = layout_of({{"w", {10, 10}}});
      auto codec = make_codec(spec);
      codec->set_layout(square);
      const auto huge_of = [](int rank, std::size_t i) { return 3e38f * noise(rank, i); };
      auto huge =
          make_vector(square.total(), [&](std::size_t i) { return huge_of(comm.rank(), i); });
      codec->allreduce_mean(comm, huge);
      expect_identical_across_ranks(comm, huge);
      for (std::size_t i = 0; i < huge.size(); ++i) {
        ASSERT_TRUE(std::isfinite(huge[i])) << spec << " element " << i;
        if (spec != "powersgd") {
          const double mean = (static_cast<double>(huge_of(0, i)) + huge_of(1, i)) / 2;
          EXPECT_NEAR(huge[i], mean, 3e38 * 1e-5) << spec << " element " << i;
        }
      }
    });
  }
}

// Ranks whose layouts differ (same length, other shapes) would size their
// factors differently: the call check stops them all.
TEST(PowerSgdTest, RanksWithDifferentLayoutsAreStoppedByTheCallCheck) {
  const auto message = expect_throw_on_every_rank<MismatchError>(2, [&](Communicator& comm) {
    auto codec = make_codec("powersgd");
    codec->set_layout(comm.rank() == 0 ? layout_of({{"w", {20, 30}}}) : layout_of({{"w", {30, 20}}}));
    std::vector<float> data(600, 1.0f);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, HasSubstr("codec"));
}

}  // namespace
}  // namespace qccl::test
