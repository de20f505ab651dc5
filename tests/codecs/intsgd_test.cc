// The IntSGD family as codecs on the in-process transport: the exact first
// step, α identical on every rank, unbiasedness and Lemma 1's variance end to
// end, overflow-free int8 sums up to 64 ranks, the heuristic baseline's rule,
// IntDIANA's linear convergence with small integers, and exact resume.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <memory>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/quantizers/intsgd.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

std::vector<float> input_of(int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) { return noise(rank, i) * (1.0f + 0.5f * rank); });
}

std::vector<double> exact_mean(int ranks, std::size_t d) {
  std::vector<double> mean(d, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const auto x = input_of(r, d);
    for (std::size_t i = 0; i < d; ++i) mean[i] += static_cast<double>(x[i]) / ranks;
  }
  return mean;
}

// An update whose norm gives α = η√d/(√(2n)·‖u‖) = target with β = 0, ε = 0.
std::vector<float> update_for_alpha(double target, double eta, std::size_t d, int ranks) {
  const double norm = eta * std::sqrt(static_cast<double>(d)) / (std::sqrt(2.0 * ranks) * target);
  return std::vector<float>(d, static_cast<float>(norm / std::sqrt(static_cast<double>(d))));
}

TEST(IntSgdSpecTest, CanonicalSpecsAndErrors) {
  EXPECT_EQ(make_codec("intsgd")->spec(), "intsgd:round=random,wire=int8,beta=0.9,eps=1e-08");
  EXPECT_EQ(make_codec("intdiana")->spec(), "intdiana:round=random,wire=int8,beta=0,eps=1e-08");
  EXPECT_EQ(make_codec("intsgd-heuristic:wire=int32,round=deterministic")->spec(),
            "intsgd-heuristic:round=deterministic,wire=int32");
  EXPECT_EQ(make_codec("intsgd:wire=int32")->wire_bytes(10), 40u);
  EXPECT_NE(make_codec("intsgd")->step_feedback(), nullptr);
  EXPECT_EQ(make_codec("intsgd-heuristic")->step_feedback(), nullptr);
  EXPECT_FALSE(make_codec("intsgd:round=deterministic")->unbiased());
  EXPECT_THAT([] { make_codec("intsgd:beta=1.5"); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("beta=1.5")));
  EXPECT_THAT([] { make_codec("intsgd:beta=abc"); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("give a number")));
  EXPECT_THAT([] { make_codec("intsgd-heuristic:beta=0"); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("no parameter 'beta'")));
  EXPECT_THROW(make_integer_codec("fp32"), InvalidArgument);
}

// Before any feedback the step is the exact fp32 mean (§4.1), bit for bit
// what the fp32 codec gives.
TEST(IntSgdCodecTest, FirstStepIsExact) {
  constexpr std::size_t d = 1000;
  run_world(3, [&](Communicator& comm) {
    auto intsgd = make_codec("intsgd");
    auto fp32 = make_codec("fp32");
    auto a = input_of(comm.rank(), d), b = a;
    intsgd->allreduce_mean(comm, a);
    fp32->allreduce_mean(comm, b);
    EXPECT_EQ(a, b);
    EXPECT_FALSE(intsgd->last_step_stats().integer);
  });
}

// E[result] = exact mean per element within 5σ, σ² from the exact two-point
// variances Σ_i p_i(1 − p_i)/(nα)² over R rounds; the mean squared error
// matches its closed form within 5 standard errors and stays under Lemma 1's
// bound d/(4nα²); results are identical on every rank.
TEST(IntSgdCodecTest, UnbiasedWithLemma1VarianceEndToEnd) {
  constexpr int n = 3, kRounds = 3000;
  constexpr std::size_t d = 384;
  constexpr double eta = 0.1, alpha = 7.0;
  const auto mean = exact_mean(n, d);
  std::vector<double> expected_var(d, 0.0);
  for (int r = 0; r < n; ++r) {
    const auto x = input_of(r, d);
    for (std::size_t i = 0; i < d; ++i) {
      const double t = alpha * static_cast<double>(x[i]);
      const double p = t - std::floor(t);
      expected_var[i] += p * (1 - p) / (n * alpha * n * alpha);
    }
  }
  std::vector<std::vector<float>> results;
  std::optional<double> bound;
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec("intsgd:wire=int32,beta=0,eps=0", {.seed = 3, .bucket = 2});
    const auto update = update_for_alpha(alpha, eta, d, n);
    std::uint64_t hash = 0;  // wraps around: unsigned
    for (int round = 0; round < kRounds; ++round) {
      codec->step_feedback()->observe_step(eta, update);
      auto data = input_of(comm.rank(), d);
      codec->allreduce_mean(comm, data);
      EXPECT_EQ(codec->last_step_stats().clipped, 0u);
      hash = hash * 31 + static_cast<std::uint64_t>(bytes_hash(data));
      if (comm.rank() == 0) results.push_back(std::move(data));
    }
    if (comm.rank() == 0) bound = codec->variance_bound(0, d, n, Algorithm::ring);
    std::vector<float> carrier(2);
    std::memcpy(carrier.data(), &hash, sizeof hash);
    expect_identical_across_ranks(comm, carrier);
  });
  ASSERT_TRUE(bound.has_value());
  // α is set through an fp32 update, so it is 7 up to fp32 rounding.
  EXPECT_NEAR(*bound, d / (4.0 * n * alpha * alpha), 1e-6 * *bound);
  // Per element, and summed over elements — plainly (a drift toward +inf)
  // and signed by the input's sign (a drift in magnitude, which is what a
  // biased sign-magnitude rounding would show) — each within 5σ, σ² the sum
  // of the exact variances over R rounds.
  double drift = 0, magnitude_drift = 0, drift_var = 0;
  for (std::size_t i = 0; i < d; ++i) {
    double sum = 0;
    for (const auto& r : results) sum += r[i];
    const double error = sum / kRounds - mean[i];
    EXPECT_NEAR(error, 0.0, 5 * std::sqrt(expected_var[i] / kRounds) + 1e-6) << i;
    drift += error;
    magnitude_drift += mean[i] < 0 ? -error : error;
    drift_var += expected_var[i] / kRounds;
  }
  EXPECT_NEAR(drift, 0.0, 5 * std::sqrt(drift_var) + 1e-5);
  EXPECT_NEAR(magnitude_drift, 0.0, 5 * std::sqrt(drift_var) + 1e-5);
  const auto errors = squared_errors(results, mean);
  const auto measured = sample_mean(errors);
  double expected = 0;
  for (double v : expected_var) expected += v;
  EXPECT_NEAR(measured.mean, expected, 5 * measured.standard_error + 1e-9);
  EXPECT_LE(expected, *bound);
}

// Every rank computes the same α from the same feedback; feedback that
// differs across ranks is caught by the call check, not decoded wrongly.
TEST(IntSgdCodecTest, ScalesAgreeAcrossRanksAndDisagreementIsCaught) {
  constexpr std::size_t d = 300;
  run_world(4, [&](Communicator& comm) {
    auto codec = make_integer_codec("intsgd");
    const std::vector<std::size_t> blocks{100, 200};
    codec->set_layout(TensorLayout::of_sizes(blocks));
    for (int step = 0; step < 3; ++step) {
      codec->observe_step(0.05, make_vector(d, [&](std::size_t i) { return 1e-3f * noise(step, i); }));
      auto data = input_of(comm.rank(), d);
      codec->allreduce_mean(comm, data);
      const auto scales = codec->scales(d, comm.size());
      ASSERT_EQ(scales.size(), 2u);
      std::vector<float> carrier(4);
      std::memcpy(carrier.data(), scales.data(), 2 * sizeof(double));
      expect_identical_across_ranks(comm, carrier);
    }
  });
  const auto message = expect_throw_on_every_rank<MismatchError>(4, [&](Communicator& comm) {
    auto codec = make_codec("intsgd");
    codec->step_feedback()->observe_step(0.05, std::vector<float>(d, 1e-3f * (1 + comm.rank())));
    auto data = input_of(comm.rank(), d);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, ::testing::HasSubstr("ranks disagree on 'codec'"));
  EXPECT_THAT(message, ::testing::HasSubstr("scales#"));
}

// Feedback as squared norms per tensor (an update that lives on a GPU):
// the same sums give the same scales, bit for bit, as the update itself;
// sums that do not fit the layout, or are negative or not finite, are
// refused naming the fix.
TEST(IntSgdCodecTest, SquaredNormFeedbackGivesTheUpdatesScales) {
  constexpr std::size_t d = 300;
  const std::vector<std::size_t> blocks{100, 0, 200};
  auto from_update = make_integer_codec("intsgd");
  auto from_norms = make_integer_codec("intsgd");
  for (auto* codec : {from_update.get(), from_norms.get()}) {
    codec->set_layout(TensorLayout::of_sizes(blocks));
  }
  for (int step = 0; step < 3; ++step) {
    const auto update = make_vector(d, [&](std::size_t i) { return 1e-3f * noise(step, i); });
    std::vector<double> norms{0, 0, 0};
    for (std::size_t i = 0; i < d; ++i) {
      norms[i < 100 ? 0 : 2] += static_cast<double>(update[i]) * static_cast<double>(update[i]);
    }
    from_update->observe_step(0.05, update);
    from_norms->observe_step_norms(0.05, norms, d);
    const auto expected = from_update->scales(d, 4);
    ASSERT_EQ(expected.size(), 3u);
    EXPECT_EQ(from_norms->scales(d, 4), expected) << "step " << step;
  }
  EXPECT_THROW(from_norms->observe_step_norms(0.05, std::vector<double>{1, 1}, d), InvalidArgument);
  EXPECT_THROW(from_norms->observe_step_norms(0.05, std::vector<double>{1, 1, 1}, d + 1), InvalidArgument);
  for (double bad : {-1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    EXPECT_THROW(from_norms->observe_step_norms(0.05, std::vector<double>{1, bad, 1}, d), InvalidArgument);
  }
}

// A scale so large that every coordinate clips: the int8 sum of n ranks is
// n·c <= 127, never wraps, and decodes to n·c/(nα) exactly; every clipped
// coordinate is counted. Checked for n up to 64.
TEST(IntSgdCodecTest, Int8NeverOverflowsUpTo64Ranks) {
  constexpr std::size_t d = 257;
  for (int n : {2, 5, 16, 64}) {
    run_world(n, [&](Communicator& comm) {
      auto codec = make_codec("intsgd:wire=int8,beta=0,eps=0");
      codec->step_feedback()->observe_step(1.0, update_for_alpha(1e6, 1.0, d, comm.size()));
      std::vector<float> data(d, comm.rank() % 2 ? 3.0f : 1.0f);
      codec->allreduce_mean(comm, data);
      const auto c = per_rank_clip(IntWire::int8, n);
      const auto stats = codec->last_step_stats();
      EXPECT_EQ(stats.clipped, d) << n;
      EXPECT_EQ(stats.largest_sent, static_cast<std::uint64_t>(c)) << n;
      EXPECT_EQ(stats.largest_sum, static_cast<std::uint64_t>(c * n)) << n;
      EXPECT_LE(stats.largest_sum, 127u);
      const double alpha = dynamic_cast<IntegerCodec&>(*codec).scales(d, n)[0];
      for (float v : data) EXPECT_FLOAT_EQ(v, static_cast<float>(c * n / (n * alpha))) << n;
    });
  }
  EXPECT_THAT([] { run_world(128, [](Communicator& comm) {
                auto codec = make_codec("intsgd");
                codec->step_feedback()->observe_step(1.0, std::vector<float>(4, 1.0f));
                std::vector<float> data(4, 1.0f);
                codec->allreduce_mean(comm, data);
              }); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("use wire=int32")));
}

// SwitchML's rule (§5.2): α = (2^(b−1) − 1)/(n·2^max_exp); results within
// 1/α of the exact mean; zero input stays zero.
TEST(HeuristicIntSgdTest, ScaleFromTheLargestExponent) {
  constexpr std::size_t d = 500;
  constexpr int n = 4;
  const auto mean = exact_mean(n, d);
  double largest = 0;
  for (int r = 0; r < n; ++r) {
    for (float v : input_of(r, d)) largest = std::max(largest, std::abs(static_cast<double>(v)));
  }
  int exponent = 0;
  std::frexp(largest, &exponent);
  const double alpha = 127.0 / (n * std::ldexp(1.0, exponent));
  run_world(n, [&](Communicator& comm) {
    auto codec = make_codec("intsgd-heuristic");
    auto data = input_of(comm.rank(), d);
    codec->allreduce_mean(comm, data);
    EXPECT_DOUBLE_EQ(codec->max_abs_error(largest, n, Algorithm::ring), 1 / alpha);
    for (std::size_t i = 0; i < d; ++i) EXPECT_LE(std::abs(data[i] - mean[i]), 1 / alpha + 1e-6);
    EXPECT_LE(codec->last_step_stats().largest_sum, 127u);
    std::vector<float> zeros(d, 0.0f);
    codec->allreduce_mean(comm, zeros);
    for (float v : zeros) EXPECT_EQ(v, 0.0f);
  });
}

// IntSGD (Determ.) of §5.1 end to end, on values worked out by hand: with
// β = 0, ε = 0 and an update of four elements 0.25 fed with η = 1,
// α = η√d/√(2n‖u‖²) = 2/√(4·0.25) = 2 exactly. Each rank sends
// round-to-nearest-even(α·x) — ties 1.5 → 2, −0.5 → 0, 2.5 → 2 — and the
// mean is the integer sum over n·α = 4.
TEST(IntSgdCodecTest, DeterministicRoundingIsExactOnHandComputedValues) {
  run_world(2, [&](Communicator& comm) {
    auto codec = make_integer_codec("intsgd:round=deterministic,beta=0,eps=0");
    codec->observe_step(1.0, std::vector<float>(4, 0.25f));
    ASSERT_EQ(codec->scales(4, 2), std::vector<double>{2.0});
    // α·x: rank 0 {0.4, 1.5, −2.6, 2.5} → {0, 2, −3, 2};
    //      rank 1 {0.52, −0.5, 2.2, 0.8} → {1, 0, 2, 1}.
    std::vector<float> data = comm.rank() == 0 ? std::vector<float>{0.2f, 0.75f, -1.3f, 1.25f}
                                               : std::vector<float>{0.26f, -0.25f, 1.1f, 0.4f};
    codec->allreduce_mean(comm, data);
    EXPECT_EQ(data, (std::vector<float>{0.25f, 0.5f, -0.25f, 0.75f}));  // {1, 2, −1, 3} / 4
    EXPECT_EQ(codec->last_step_stats().largest_sent, comm.rank() == 0 ? 3u : 2u);  // this rank's
    EXPECT_EQ(codec->last_step_stats().largest_sum, 3u);
  });
}

// Heuristic IntSGD's scale (§5.2) on values worked out by hand: the largest
// |x| over both ranks is 2.5 < 2^2, so α = (2^7 − 1)/(n·2^2) = 127/8 =
// 15.875, and rounding to nearest gives the integers below. 2^max_exp is
// the power of two above the largest value (2^(k+1) for exactly 2^k), so
// α·|x| < (2^(b−1) − 1)/n.
TEST(HeuristicIntSgdTest, ScaleIsTheSwitchMlRuleOnHandComputedValues) {
  run_world(2, [&](Communicator& comm) {
    auto codec = make_integer_codec("intsgd-heuristic:round=deterministic");
    // α·x: rank 0 {4.7625, −23.8125, 0.79375} → {5, −24, 1};
    //      rank 1 {39.6875, 1.5875, −11.1125} → {40, 2, −11}.
    std::vector<float> data = comm.rank() == 0 ? std::vector<float>{0.3f, -1.5f, 0.05f}
                                               : std::vector<float>{2.5f, 0.1f, -0.7f};
    codec->allreduce_mean(comm, data);
    const double mean_factor = 1.0 / (2 * 15.875);
    EXPECT_EQ(data, (std::vector<float>{static_cast<float>(45 * mean_factor),
                                        static_cast<float>(-22 * mean_factor),
                                        static_cast<float>(-10 * mean_factor)}));
    EXPECT_EQ(codec->last_step_stats().largest_sent, comm.rank() == 0 ? 24u : 40u);
    EXPECT_EQ(codec->last_step_stats().largest_sum, 45u);
    EXPECT_EQ(codec->last_step_stats().clipped, 0u);
    // A largest |x| of exactly 2 = 2^1 takes 2^max_exp = 2^2 as well (the
    // power of two above it): α = 15.875 again, 2·α = 31.75 → 32.
    std::vector<float> edge = comm.rank() == 0 ? std::vector<float>{0.0f, 1.0f}
                                               : std::vector<float>{2.0f, 0.0f};
    codec->allreduce_mean(comm, edge);
    EXPECT_EQ(edge, (std::vector<float>{static_cast<float>(32 * mean_factor),
                                        static_cast<float>(16 * mean_factor)}));
  });
}

// Over several fed steps, every codec of the family leaves identical bits on
// every rank, on ring and halving-doubling, for fp32 and for fp64 data.
TEST(IntSgdCodecTest, ReplicasStayBitwiseIdentical) {
  constexpr std::size_t d = 777;
  for (const char* spec : {"intsgd", "intsgd:wire=int32,round=deterministic",
                           "intsgd-heuristic", "intdiana", "intdiana:wire=int64"}) {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
      run_world(5, [&](Communicator& comm) {
        auto codec = make_integer_codec(spec, {.seed = 4, .bucket = 3});
        CollectiveOptions options;
        options.algorithm = algorithm;
        options.chunk_bytes = 256;  // many pipelined chunks
        std::uint64_t hash = 0;  // wraps around: unsigned
        for (int step = 0; step < 4; ++step) {
          auto data = input_of(comm.rank() + step, d);
          codec->allreduce_mean(comm, data, options);
          feed_sgd_step(*codec, data, 0.1);
          std::vector<double> wide(d);
          for (std::size_t i = 0; i < d; ++i) wide[i] = noise(comm.rank(), i + step);
          codec->allreduce_mean(comm, std::span<double>(wide), options);
          const std::span<const float> wide_bits(reinterpret_cast<const float*>(wide.data()),
                                                 2 * d);  // the fp64 bytes, all of them
          hash = hash * 31 + static_cast<std::uint64_t>(bytes_hash(data)) * 7 +
                 static_cast<std::uint64_t>(bytes_hash(wide_bits));
        }
        std::vector<float> carrier(2);
        std::memcpy(carrier.data(), &hash, sizeof hash);
        expect_identical_across_ranks(comm, carrier);
      });
    }
  }
}

TEST(IntSgdCodecTest, RejectsMismatchedUpdateAndNativeAlgorithm) {
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("intsgd");
    codec->step_feedback()->observe_step(0.1, std::vector<float>(10, 1.0f));
    std::vector<float> data(12, 1.0f);
    EXPECT_THAT([&] { codec->allreduce_mean(comm, data); },
                ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("update had 10")));
    CollectiveOptions native;
    native.algorithm = Algorithm::native;
    EXPECT_THROW(codec->allreduce_mean(comm, data, native), InvalidArgument);
    std::vector<float> nan(10, std::nanf(""));
    EXPECT_THROW(codec->allreduce_mean(comm, nan), InvalidArgument);
  });
}

// A heterogeneous strongly convex quadratic: f_i(x) = ½ Σ_j a_ij (x_j − b_ij)²,
// whose minimizer x*_j = Σ_i a_ij b_ij / Σ_i a_ij differs from every rank's.
// Full-gradient IntDIANA with α = η√d/(√(2n)‖x_k − x_(k−1)‖) (Algorithm 3,
// ε = 0) converges linearly (Theorem 4) while the integers each rank sends
// stay small; IntGD's grow as ‖x_k − x_(k−1)‖ → 0 (Appendix A.2: α·∇f_i(x_k)
// with ∇f_i(x*) ≠ 0). Their sum stays small for both: it is α·n·∇f(x_k).
// 100 steps end before the iterates reach fp64 resolution (~1e-15 here),
// where x_k − x_(k−1) is rounding noise and α stops meaning anything.
struct QuadraticRun {
  double final_distance = 0;
  double initial_distance = 0;
  std::uint64_t largest_late_integer = 0;  // sent by rank 0 over the last half of the run
};

QuadraticRun run_quadratic(const std::string& spec, int n, int iterations) {
  constexpr std::size_t d = 20;
  const auto a = [](int r, std::size_t j) { return 1.0 + 0.5 * ((r + static_cast<int>(j)) % 3); };
  const auto b = [](int r, std::size_t j) { return std::sin(1.0 + r * 7.0 + j * 3.0); };
  std::vector<double> optimum(d);
  for (std::size_t j = 0; j < d; ++j) {
    double num = 0, den = 0;
    for (int r = 0; r < n; ++r) { num += a(r, j) * b(r, j); den += a(r, j); }
    optimum[j] = num / den;
  }
  const double eta = 1.0 / (2 * 2.0);  // 1/(2L), L = max a = 2
  QuadraticRun result;
  run_world(n, [&](Communicator& comm) {
    auto codec = make_integer_codec(spec, {.seed = 11});
    std::vector<double> x(d, 0.0), previous(d), g(d), update(d);
    const auto distance = [&] {
      double s = 0;
      for (std::size_t j = 0; j < d; ++j) s += (x[j] - optimum[j]) * (x[j] - optimum[j]);
      return std::sqrt(s);
    };
    if (comm.rank() == 0) result.initial_distance = distance();
    std::uint64_t largest = 0;
    for (int k = 0; k < iterations; ++k) {
      for (std::size_t j = 0; j < d; ++j) g[j] = a(comm.rank(), j) * (x[j] - b(comm.rank(), j));
      codec->allreduce_mean(comm, g);
      previous = x;
      for (std::size_t j = 0; j < d; ++j) {
        x[j] -= eta * g[j];
        update[j] = x[j] - previous[j];
      }
      codec->observe_step(eta, update);
      if (k >= iterations / 2) largest = std::max(largest, codec->last_step_stats().largest_sent);
    }
    if (comm.rank() == 0) {
      result.final_distance = distance();
      result.largest_late_integer = largest;
    }
  });
  return result;
}

TEST(IntDianaTest, ConvergesLinearlyWithSmallIntegers) {
  const auto diana = run_quadratic("intdiana:wire=int64,eps=0", 4, 100);
  // Linear rate: 100 steps at a contraction well below 1 reach 1e-10 relative.
  EXPECT_LT(diana.final_distance, 1e-10 * diana.initial_distance);
  EXPECT_LE(diana.largest_late_integer, 15u) << "IntDIANA needs at most 5 bits here";
  const auto intgd = run_quadratic("intsgd:wire=int64,beta=0,eps=0", 4, 100);
  EXPECT_GT(intgd.largest_late_integer, 1000 * std::max<std::uint64_t>(diana.largest_late_integer, 1));
}

// Checkpoint mid-run, restore into fresh instances, and continue: the same
// bits as an uninterrupted run (scales, shifts and the step counter persist).
TEST(IntDianaTest, SaveAndLoadStateResumesExactly) {
  constexpr std::size_t d = 64;
  const auto run = [&](bool interrupt) {
    std::vector<float> last;
    run_world(2, [&](Communicator& comm) {
      auto codec = make_codec("intdiana:eps=0.001", {.seed = 9});
      std::vector<float> x(d, 0.5f);
      for (int k = 0; k < 12; ++k) {
        if (interrupt && k == 6) {
          const auto state = codec->save_state();
          const auto step = codec->step();
          codec = make_codec("intdiana:eps=0.001", {.seed = 9});
          codec->load_state(state);
          codec->set_step(step);
        }
        auto g = make_vector(d, [&](std::size_t i) {
          return x[i] - 0.1f * noise(comm.rank(), i);
        });
        codec->allreduce_mean(comm, g);
        std::vector<float> update(d);
        for (std::size_t i = 0; i < d; ++i) {
          update[i] = -0.3f * g[i];
          x[i] += update[i];
        }
        codec->step_feedback()->observe_step(0.3, update);
      }
      if (comm.rank() == 0) last = x;
    });
    return last;
  };
  EXPECT_EQ(run(false), run(true));
  EXPECT_THROW(make_codec("intsgd")->load_state(make_codec("intdiana")->save_state()),
               InvalidArgument);
  const std::vector<std::byte> junk(3);
  EXPECT_THROW(make_codec("fp32")->load_state(junk), InvalidArgument);
}

}  // namespace
}  // namespace qccl::test

namespace qccl::test {
namespace {

// An integer chunk whose value no n ranks' clipped integers can sum to — a
// corrupt message, INT_MIN included, whose magnitude has no negation in its
// own type — is rejected by decode and decode_contribution with a CommError,
// on every wire; n·c itself decodes.
template <class Int>
void expect_corrupt_integers_rejected(const std::string& spec, int ranks) {
  SCOPED_TRACE(spec);
  const auto codec = make_codec(spec);
  const auto reduction = codec->encoding_for(1.0, ranks, 0, Algorithm::ring);
  const Int limit = static_cast<Int>(per_rank_clip(sizeof(Int) == 1   ? IntWire::int8
                                                   : sizeof(Int) == 4 ? IntWire::int32
                                                                      : IntWire::int64,
                                                   ranks) *
                                     ranks);
  std::vector<float> out(3);
  const std::vector<Int> valid{limit, static_cast<Int>(-limit), 0};
  reduction->decode(std::as_bytes(std::span<const Int>(valid)), 0, out);
  for (float x : out) EXPECT_TRUE(std::isfinite(x));
  for (const Int bad : {std::numeric_limits<Int>::min(), static_cast<Int>(-limit - 1)}) {
    const std::vector<Int> chunk{1, bad, 2};
    const auto bytes = std::as_bytes(std::span<const Int>(chunk));
    EXPECT_THROW(reduction->decode(bytes, 0, out), CommError);
    EXPECT_THROW(reduction->decode_contribution(bytes, 0, out), CommError);
  }
}

TEST(IntegerSumReductionTest, CorruptSumsAndIntMinAreRejected) {
  expect_corrupt_integers_rejected<std::int8_t>("intsgd-heuristic", 1);
  expect_corrupt_integers_rejected<std::int8_t>("intsgd-heuristic", 5);
  expect_corrupt_integers_rejected<std::int32_t>("intsgd-heuristic:wire=int32", 4);
  expect_corrupt_integers_rejected<std::int64_t>("intsgd-heuristic:wire=int64", 3);
}

}  // namespace
}  // namespace qccl::test
