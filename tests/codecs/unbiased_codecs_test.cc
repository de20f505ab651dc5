// TernGrad and natural compression (C_nat): specs and sizes; every operation
// on ranks {1,2,3,4,7}, sizes {0,1,10,1000,100000}, ring and
// halving-doubling; exact resumption; unbiasedness at 5σ; the measured
// squared error against its closed form and the variance bound (tight on
// the worst inputs); TernGrad's values as integer sums on each tensor's
// shared scale, bitwise the same on both wires, unbiased with the
// per-tensor variance when a vector holds several tensors; clipping. C_nat's
// outputs and corrupt chunks: natural_codec_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

// The largest |x| of rank inputs input(0..n-1).
double global_max(int ranks, const std::function<std::vector<float>(int)>& input) {
  double largest = 0;
  for (int r = 0; r < ranks; ++r) {
    for (float x : input(r)) largest = std::max(largest, static_cast<double>(std::abs(x)));
  }
  return largest;
}

// Tensors of the given sizes, tensor t's elements noise times
// magnitudes[t], growing with the rank.
std::vector<float> layered_input(const std::vector<std::size_t>& sizes,
                                 const std::vector<float>& magnitudes, int rank) {
  std::vector<float> x;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    for (std::size_t k = 0; k < sizes[t]; ++k) {
      x.push_back(noise(rank, x.size()) * magnitudes[t] * (1.0f + 0.5f * static_cast<float>(rank)));
    }
  }
  return x;
}

// Per element, TernGrad's layer-wise scale s_t of its tensor: the largest
// |x| of that tensor over the inputs of ranks 0..n-1.
std::vector<float> element_scales(const std::vector<std::size_t>& sizes, int ranks,
                                  const std::function<std::vector<float>(int)>& input) {
  std::vector<float> scales;
  std::size_t first = 0;
  for (std::size_t size : sizes) {
    float s = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto x = input(r);
      for (std::size_t i = first; i < first + size; ++i) s = std::max(s, std::abs(x[i]));
    }
    scales.insert(scales.end(), size, s);
    first += size;
  }
  return scales;
}

// E(C(x) − x)² of TernGrad on scale s, and of C_nat (in the window).
double ternary_variance(float x, double s) {
  const double a = std::abs(x);
  return a * (s - a);
}
double natural_variance(float x) {
  const double a = std::abs(x);
  if (a == 0) return 0;
  int e = 0;
  std::frexp(a, &e);
  const double low = std::ldexp(1.0, e - 1);  // a in [low, 2·low)
  return (a - low) * (2 * low - a);
}

TEST(UnbiasedCodecsTest, SpecsListEveryParameterAndReadBack) {
  EXPECT_EQ(make_codec("terngrad")->spec(), "terngrad:clip=off,wire=int8");
  EXPECT_EQ(make_codec("natural")->spec(), "natural");
  for (const char* spec :
       {"terngrad", "terngrad:wire=2bit", "terngrad:clip=2.5,wire=2bit", "natural"}) {
    const auto codec = make_codec(spec);
    EXPECT_EQ(make_codec(codec->spec())->spec(), codec->spec());
  }
  EXPECT_TRUE(make_codec("terngrad")->unbiased());
  EXPECT_FALSE(make_codec("terngrad:clip=2.5")->unbiased());
  EXPECT_TRUE(make_codec("natural")->unbiased());
  EXPECT_EQ(make_codec("terngrad")->aggregation(), Aggregation::compressed_domain);
  EXPECT_EQ(make_codec("terngrad:wire=2bit")->aggregation(), Aggregation::allgather_decode);
  EXPECT_EQ(make_codec("natural")->aggregation(), Aggregation::allgather_decode);
  EXPECT_EQ(make_codec("terngrad")->wire_bytes(10), 10u);
  EXPECT_EQ(make_codec("terngrad:wire=2bit")->wire_bytes(10), 3u);
  EXPECT_EQ(make_codec("terngrad:wire=2bit")->wire_bytes(12), 3u);
  EXPECT_EQ(make_codec("natural")->wire_bytes(10), 10u);
  EXPECT_FALSE(make_codec("terngrad:clip=2.5")->variance_bound(1, 10, 2, Algorithm::ring));
  for (const char* bad : {"terngrad:clip=3", "terngrad:wire=4bit", "natural:bits=8"}) {
    EXPECT_THROW(make_codec(bad), InvalidArgument) << bad;
  }
}

TEST(UnbiasedCodecsTest, StatelessCodecsResumeExactly) {
  const std::vector<std::size_t> sizes{300, 701};
  const TensorLayout layout = TensorLayout::of_sizes(sizes);
  for (const char* spec : {"terngrad", "terngrad:wire=2bit", "terngrad:clip=2.5",
                           "terngrad:clip=2.5,wire=2bit", "natural"}) {
    run_world(3, [&](Communicator& comm) {
      check_codec_resumes_exactly(comm, spec, layout, 6, /*expect_state=*/false);
    });
  }
}

// Inputs: noise of growing scale per rank, exact zeros, and for C_nat
// exact powers of two and elements below its window (2^-126 of the
// reference), which round to 0 or the window's smallest power.
std::vector<float> unbiased_input(const std::string& spec, int rank, std::size_t d) {
  return make_vector(d, [&](std::size_t i) {
    if (i % 37 == 5) return 0.0f;
    if (spec == "natural" && i % 41 == 7) {
      return std::ldexp(rank % 2 ? -1.0f : 1.0f, -static_cast<int>(i % 20));
    }
    if (spec == "natural" && i % 43 == 9) return noise(rank, i) * 0x1p-127f;
    return noise(rank, i) * (1.0f + 0.5f * static_cast<float>(rank));
  });
}

using StatisticsParam = std::tuple<std::string, int, Algorithm>;
class UnbiasedEndToEndTest : public ::testing::TestWithParam<StatisticsParam> {};

TEST_P(UnbiasedEndToEndTest, MeanOfManyStepsIsTheExactMean) {
  const auto& [spec, n, algorithm] = GetParam();
  expect_unbiased_end_to_end(spec, n, algorithm, [&](int r) { return unbiased_input(spec, r, 300); },
                             2000);
}

std::string statistics_name(const ::testing::TestParamInfo<StatisticsParam>& info) {
  return test_name(std::get<0>(info.param) + "_n" + std::to_string(std::get<1>(info.param)) + "_" +
                   std::string(to_string(std::get<2>(info.param))));
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, UnbiasedEndToEndTest,
    ::testing::Combine(::testing::Values("terngrad", "terngrad:wire=2bit", "natural"),
                       ::testing::Values(1, 2, 3, 5, 8),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
    statistics_name);

// The measured E‖result − mean‖² against its closed form, (1/n²) Σ over
// ranks and elements of each element's variance (two-sided, 5 standard
// errors), and the closed form against variance_bound(). "worst" inputs
// are the bound's extremes: TernGrad's one element at s and the rest at
// s(√N − 1)/(N − 1) (N = n·d), C_nat's elements at 4/3 of a power of two;
// there the bound is nearly reached.
using VarianceParam = std::tuple<std::string, int, Algorithm, bool>;
class UnbiasedVarianceTest : public ::testing::TestWithParam<VarianceParam> {};

std::vector<float> variance_input(const std::string& spec, bool worst, int n, int rank,
                                  std::size_t d) {
  if (!worst) {
    return make_vector(d, [&](std::size_t i) { return noise(rank, i) * (1.0f + 0.25f * rank); });
  }
  if (spec == "natural") {
    return make_vector(d, [&](std::size_t i) {
      const float v = std::ldexp(4.0f / 3.0f, -static_cast<int>(i % 30));
      return (i + static_cast<std::size_t>(rank)) % 2 ? -v : v;
    });
  }
  const double total = static_cast<double>(n) * static_cast<double>(d);
  const auto rest = static_cast<float>((std::sqrt(total) - 1) / (total - 1));
  return make_vector(d, [&](std::size_t i) { return rank == 0 && i == 0 ? 1.0f : rest; });
}

TEST_P(UnbiasedVarianceTest, MeasuredErrorMatchesTheClosedFormWithinTheBound) {
  const auto& [spec, n, algorithm, worst] = GetParam();
  constexpr std::size_t kD = 2048;
  constexpr int kRounds = 300;
  auto input = [&](int r) { return variance_input(spec, worst, n, r, kD); };
  const double s = global_max(n, input);
  const auto [squared_norm, mean] = rank_inputs(n, kD, input);
  double closed_form = 0;
  for (int r = 0; r < n; ++r) {
    for (float x : input(r)) {
      closed_form += (spec == "natural" ? natural_variance(x) : ternary_variance(x, s)) /
                     (static_cast<double>(n) * n);
    }
  }
  const auto bound = make_codec(spec)->variance_bound(squared_norm, kD, n, algorithm);
  ASSERT_TRUE(bound.has_value());
  EXPECT_LE(closed_form, *bound);
  if (worst) {
    EXPECT_GE(closed_form, 0.99 * *bound) << "the bound is not tight";
  }
  const SampleMean error = sample_mean(squared_errors(
      collect_rounds(spec, n, algorithm, input, kRounds, std::size_t{1} << 20, {.seed = 12, .bucket = 0}),
      mean));
  EXPECT_NEAR(error.mean, closed_form, 5 * error.standard_error + 1e-6 * closed_form) << spec;
  EXPECT_LE(error.mean, *bound + 5 * error.standard_error) << spec;
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, UnbiasedVarianceTest,
    ::testing::Values(VarianceParam{"terngrad", 1, Algorithm::ring, false},
                      VarianceParam{"terngrad", 3, Algorithm::ring, false},
                      VarianceParam{"terngrad", 4, Algorithm::halving_doubling, false},
                      VarianceParam{"terngrad:wire=2bit", 5, Algorithm::ring, false},
                      VarianceParam{"terngrad", 2, Algorithm::ring, true},
                      VarianceParam{"terngrad:wire=2bit", 3, Algorithm::halving_doubling, true},
                      VarianceParam{"natural", 1, Algorithm::ring, false},
                      VarianceParam{"natural", 3, Algorithm::ring, false},
                      VarianceParam{"natural", 4, Algorithm::halving_doubling, true},
                      VarianceParam{"natural", 2, Algorithm::ring, true}),
    [](const ::testing::TestParamInfo<VarianceParam>& info) {
      return test_name(std::get<0>(info.param) + "_n" + std::to_string(std::get<1>(info.param)) +
                       "_" + std::string(to_string(std::get<2>(info.param))) +
                       (std::get<3>(info.param) ? "_worst" : "_noise"));
    });

// TernGrad's mean is (Σ_r q_r) · fl(s/n), q_r ∈ {−1, 0, 1} each rank's
// levels on the shared scale s (the global max): every result is an integer
// k, |k| <= n, times fl(s/n), each rank's own contribution is exactly
// q_r · s with x's sign, and k is the sum of the own contributions over s.
TEST(TernGradCodecTest, ValuesAreIntegerSumsOfTernaryLevelsOnTheSharedScale) {
  constexpr std::size_t kD = 1000;
  for (const char* spec : {"terngrad", "terngrad:wire=2bit"}) {
    for (int n : {1, 2, 3, 5}) {
      auto input = [](int r) {
        return make_vector(kD, [&](std::size_t i) { return noise(r, i) * (1.0f + r); });
      };
      const double s = global_max(n, input);
      const auto step = static_cast<float>(s / n);
      run_world(n, [&](Communicator& comm) {
        auto codec = make_codec(spec, {.seed = 3, .bucket = 1});
        const auto x = input(comm.rank());
        auto data = x;
        std::vector<float> own(kD);
        codec->allreduce_mean(comm, data, {}, own);
        std::vector<double> levels(kD);
        for (std::size_t i = 0; i < kD; ++i) {
          ASSERT_TRUE(own[i] == 0 || std::abs(own[i]) == static_cast<float>(s)) << own[i];
          ASSERT_TRUE(own[i] == 0 || std::signbit(own[i]) == std::signbit(x[i]));
          levels[i] = own[i] / s;
        }
        allreduce_values<double>(comm.transport(), levels, ReduceOp::sum, comm.options().timeout);
        for (std::size_t i = 0; i < kD; ++i) {
          ASSERT_LE(std::abs(levels[i]), n);
          ASSERT_EQ(data[i], static_cast<float>(levels[i]) * step) << spec << " n=" << n << " at " << i;
        }
      });
    }
  }
}

// Both wires draw the same levels and scale their exact sum once: every
// operation gives the same bits on int8 partial sums and on 2-bit codes
// (reduce-scatter blocks differ in where they end — 2-bit blocks hold whole
// bytes — and each equals the same slice of the common mean); so they do
// with a layout of tensors of different magnitudes (one of them zero), in
// chunks that straddle tensors, and with allgather shards whose scales
// differ per rank.
TEST(TernGradCodecTest, BothWiresGiveBitwiseTheSameResults) {
  const std::vector<std::size_t> sizes{1000, 7, 2994, 1000};
  const std::vector<float> magnitudes{1e-3f, 5.0f, 1.0f, 0.0f};
  for (bool layered : {false, true}) {
    for (int n : {2, 3, 8}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        run_world(n, [&](Communicator& comm) {
          CollectiveOptions options;
          options.algorithm = algorithm;
          options.chunk_bytes = 256;
          const int rank = comm.rank();
          const auto x = layered ? layered_input(sizes, magnitudes, rank)
                                 : make_vector(5001, [&](std::size_t i) { return noise(rank, i); });
          auto shard = x;
          if (layered) {
            for (float& v : shard) v = std::ldexp(v, -4 * rank);
          }
          std::vector<std::vector<float>> means, gathers;
          for (const char* spec : {"terngrad", "terngrad:wire=2bit"}) {
            auto codec = make_codec(spec, {.seed = 9, .bucket = 4});
            if (layered) codec->set_layout(TensorLayout::of_sizes(sizes));
            auto mean = x;
            codec->allreduce_mean(comm, mean, options);
            codec->set_step(0);
            const Range mine =
                codec->reduce_scatter_blocks(x.size(), n)[static_cast<std::size_t>(rank)];
            std::vector<float> block(mine.count), gathered(x.size() * static_cast<std::size_t>(n));
            codec->reduce_scatter_mean(comm, x, block, options);
            const auto begin = mean.begin() + static_cast<long>(mine.first);
            EXPECT_EQ(block, std::vector<float>(begin, begin + static_cast<long>(mine.count)))
                << spec << ": the reduce-scatter block differs from the mean";
            codec->allgather(comm, shard, gathered, options);
            means.push_back(std::move(mean));
            gathers.push_back(std::move(gathered));
          }
          const std::string where = "n=" + std::to_string(n) + " " +
                                    std::string(to_string(algorithm)) +
                                    (layered ? " with a layout" : "");
          EXPECT_EQ(means[0], means[1]) << "allreduce, " << where;
          EXPECT_EQ(gathers[0], gathers[1]) << "allgather, " << where;
        });
      }
    }
  }
}

// Layer-wise TernGrad (Wen et al. 2017, §3): with tensors of very
// different magnitudes in one vector, each tensor's mean is
// (Σ_r q_r) · fl(s_t/n) on its own s_t, the largest |x| of that tensor over
// all ranks — so the small tensor is not rounded to zero on the large one's
// scale —, each rank's own contribution is q_r · s_t, a tensor that is zero
// on every rank stays zero, every rank has the same bits, and the error is
// within max_abs_error of the global ∞-norm. An allgather's shards are each
// on their owner's own max.
TEST(TernGradCodecTest, EachTensorIsScaledByItsOwnMaxOverRanks) {
  const std::vector<std::size_t> sizes{300, 5, 200, 495};
  const std::vector<float> magnitudes{1e-3f, 0.0f, 10.0f, 0.5f};
  const TensorLayout layout = TensorLayout::of_sizes(sizes);
  const std::size_t d = layout.total();
  auto input = [&](int r) { return layered_input(sizes, magnitudes, r); };
  auto shard_of = [&](int r) {
    auto v = input(r);
    for (float& e : v) e = std::ldexp(e, -8 * r);
    return v;
  };
  for (const char* spec : {"terngrad", "terngrad:wire=2bit"}) {
    for (int n : {1, 2, 3, 5}) {
      const std::vector<float> s = element_scales(sizes, n, input);
      const double largest = global_max(n, input);
      std::vector<double> exact(d, 0.0);
      for (int r = 0; r < n; ++r) {
        const auto x = input(r);
        for (std::size_t i = 0; i < d; ++i) exact[i] += x[i] / static_cast<double>(n);
      }
      run_world(n, [&](Communicator& comm) {
        auto codec = make_codec(spec, {.seed = 5, .bucket = 2});
        codec->set_layout(layout);
        CollectiveOptions options;
        options.chunk_bytes = 64;  // chunks straddle tensors
        const auto x = input(comm.rank());
        auto data = x;
        std::vector<float> own(d);
        codec->allreduce_mean(comm, data, options, own);
        expect_identical_across_ranks(comm, data);
        std::vector<double> levels(d);
        for (std::size_t i = 0; i < d; ++i) {
          ASSERT_TRUE(own[i] == 0 || std::abs(own[i]) == s[i])
              << spec << " " << own[i] << " at " << i;
          ASSERT_TRUE(own[i] == 0 || std::signbit(own[i]) == std::signbit(x[i]));
          levels[i] = own[i] == 0 ? 0.0 : own[i] / s[i];
        }
        allreduce_values<double>(comm.transport(), levels, ReduceOp::sum, comm.options().timeout);
        const double bound = codec->max_abs_error(largest, n, Algorithm::ring);
        std::size_t small_nonzero = 0;
        for (std::size_t i = 0; i < d; ++i) {
          ASSERT_LE(std::abs(levels[i]), n);
          const auto step = static_cast<float>(static_cast<double>(s[i]) / n);
          ASSERT_EQ(data[i], static_cast<float>(levels[i]) * step)
              << spec << " n=" << n << " at " << i;
          ASSERT_LE(std::abs(data[i] - exact[i]), bound) << spec << " n=" << n << " at " << i;
          small_nonzero += i < sizes[0] && data[i] != 0;
        }
        EXPECT_GT(small_nonzero, sizes[0] / 4) << spec << ": the small tensor was rounded away";

        std::vector<float> gathered(d * static_cast<std::size_t>(n)), own_shard(d);
        codec->allgather(comm, shard_of(comm.rank()), gathered, options, own_shard);
        expect_identical_across_ranks(comm, gathered);
        for (int r = 0; r < n; ++r) {
          const auto xr = shard_of(r);
          const auto sr = static_cast<float>(global_max(1, [&](int) { return xr; }));
          for (std::size_t i = 0; i < d; ++i) {
            const float v = gathered[static_cast<std::size_t>(r) * d + i];
            ASSERT_TRUE(v == 0 || (std::abs(v) == sr && std::signbit(v) == std::signbit(xr[i])))
                << spec << " shard " << r << ": " << v << " at " << i;
            if (r == comm.rank()) {
              ASSERT_EQ(own_shard[i], v);
            }
          }
        }
      });
    }
  }
}

// Layer-wise scales keep TernGrad unbiased: tensors of magnitudes 1e-3, 10
// and 1 in one vector, in 32-byte chunks that straddle them; the mean of
// many steps is the exact mean (5σ), every rank has the same bits, and the
// measured squared error matches the per-tensor closed form
// (1/n²) Σ |x|(s_t − |x|) (two-sided, 5 standard errors) — below the one
// of a single scale for the whole vector — and stays within
// variance_bound().
using LayeredParam = std::tuple<std::string, int, Algorithm>;
class TernGradLayersTest : public ::testing::TestWithParam<LayeredParam> {};

TEST_P(TernGradLayersTest, UnbiasedWithThePerTensorVariance) {
  const auto& [spec, n, algorithm] = GetParam();
  const std::vector<std::size_t> sizes{37, 150, 113};
  const std::vector<float> magnitudes{1e-3f, 10.0f, 1.0f};
  constexpr int kRounds = 2000;
  auto input = [&](int r) { return layered_input(sizes, magnitudes, r); };
  const std::size_t d = 300;
  const std::vector<float> s = element_scales(sizes, n, input);
  const double largest = global_max(n, input);
  const double n2 = static_cast<double>(n) * n;
  std::vector<double> exact(d, 0.0);
  double squared_norm = 0, per_tensor = 0, one_scale = 0;
  for (int r = 0; r < n; ++r) {
    const auto x = input(r);
    for (std::size_t i = 0; i < d; ++i) {
      exact[i] += x[i] / static_cast<double>(n);
      squared_norm += static_cast<double>(x[i]) * x[i];
      per_tensor += ternary_variance(x[i], s[i]) / n2;
      one_scale += ternary_variance(x[i], largest) / n2;
    }
  }
  const auto rounds = collect_rounds(spec, n, algorithm, input, kRounds, 32,
                                     {.seed = 21, .bucket = 3}, TensorLayout::of_sizes(sizes));
  expect_unbiased(spec + " with a layout", rounds, exact);
  const SampleMean error = sample_mean(squared_errors(rounds, exact));
  EXPECT_LT(per_tensor, one_scale);
  EXPECT_NEAR(error.mean, per_tensor, 5 * error.standard_error + 1e-6 * per_tensor) << spec;
  const auto bound = make_codec(spec)->variance_bound(squared_norm, d, n, algorithm);
  ASSERT_TRUE(bound.has_value());
  EXPECT_LE(error.mean, *bound + 5 * error.standard_error) << spec;
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, TernGradLayersTest,
    ::testing::Values(LayeredParam{"terngrad", 1, Algorithm::ring},
                      LayeredParam{"terngrad", 3, Algorithm::ring},
                      LayeredParam{"terngrad", 4, Algorithm::halving_doubling},
                      LayeredParam{"terngrad:wire=2bit", 2, Algorithm::ring},
                      LayeredParam{"terngrad:wire=2bit", 3, Algorithm::halving_doubling},
                      LayeredParam{"terngrad:wire=2bit", 5, Algorithm::ring}),
    statistics_name);

// The scales are exchanged one per tensor of the layout: ranks whose
// layouts differ fail the call check, on every rank, and a layout that
// does not cover the data is refused before anything is exchanged.
TEST(TernGradCodecTest, RanksMustAgreeOnTheLayout) {
  const auto message = expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto codec = make_codec("terngrad");
    const std::vector<std::size_t> sizes =
        comm.rank() == 0 ? std::vector<std::size_t>{5, 5} : std::vector<std::size_t>{4, 6};
    codec->set_layout(TensorLayout::of_sizes(sizes));
    std::vector<float> data(10, 1.0f);
    codec->allreduce_mean(comm, data);
  });
  EXPECT_THAT(message, HasSubstr("codec"));
  run_world(1, [](Communicator& comm) {
    auto codec = make_codec("terngrad:wire=2bit");
    codec->set_layout(TensorLayout::of_sizes(std::vector<std::size_t>{5, 5}));
    std::vector<float> data(11, 1.0f);
    EXPECT_THAT([&] { codec->allreduce_mean(comm, data); },
                ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("layout")));
  });
}

// TernGrad's clipping (clip=2.5): each tensor clamped to ±2.5σ of its own
// elements, each tensor's shared scale s_t is its largest clamped
// magnitude, and the results average to the clamped values (not to the
// input: biased).
TEST(TernGradCodecTest, ClipsEachTensorToItsDeviationsAndIsUnbiasedForTheClippedValues) {
  const std::vector<std::size_t> sizes{400, 600};
  auto tensor_input = make_vector(1000, [](std::size_t i) {
    const float scale = i < 400 ? 0.01f : 1.0f;
    return (i == 7 || i == 700) ? 40.0f * scale : noise(0, i) * scale;
  });
  std::vector<double> clipped(tensor_input.begin(), tensor_input.end());
  std::vector<float> scale_of(tensor_input.size());  // s_t of each element's tensor
  for (std::size_t first = 0, t = 0; t < sizes.size(); first += sizes[t++]) {
    double sum = 0, squares = 0;
    for (std::size_t i = first; i < first + sizes[t]; ++i) sum += tensor_input[i];
    const double mean = sum / static_cast<double>(sizes[t]);
    for (std::size_t i = first; i < first + sizes[t]; ++i) {
      squares += (tensor_input[i] - mean) * (tensor_input[i] - mean);
    }
    const auto bound = static_cast<float>(2.5 * std::sqrt(squares / static_cast<double>(sizes[t])));
    float s = 0;
    for (std::size_t i = first; i < first + sizes[t]; ++i) {
      clipped[i] = std::min(std::max(tensor_input[i], -bound), bound);
      s = std::max(s, static_cast<float>(std::abs(clipped[i])));
    }
    ASSERT_LT(s, 40.0f * (t == 0 ? 0.01f : 1.0f));  // the outlier was clipped
    std::fill(scale_of.begin() + static_cast<long>(first),
              scale_of.begin() + static_cast<long>(first + sizes[t]), s);
  }
  std::vector<std::vector<float>> rounds;
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("terngrad:clip=2.5", {.seed = 2, .bucket = 0});
    codec->set_layout(TensorLayout::of_sizes(sizes));
    for (int round = 0; round < 3000; ++round) {
      auto data = tensor_input;
      codec->allreduce_mean(comm, data);
      for (std::size_t i = 0; i < data.size(); ++i) {
        ASSERT_TRUE(data[i] == 0 || std::abs(data[i]) == scale_of[i]) << data[i] << " at " << i;
      }
      rounds.push_back(std::move(data));
    }
  });
  expect_unbiased("terngrad:clip=2.5", rounds, clipped);
}

}  // namespace
}  // namespace qccl::test
