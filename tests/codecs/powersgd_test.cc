// PowerSGD (Vogels et al. 2019): exact on inputs of rank r that share one
// column space, uncompressed tensors equal to the fp32 mean, orthonormal
// factors, identical bits on every rank, the error-feedback residual
// identity (Algorithm 2) bit for bit, warm start converging to the best
// rank-r approximation, error feedback keeping the accumulated results on
// the accumulated inputs, exact resume, the shared operation checks, and
// specs, shapes and wire sizes.
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
#include "qccl/codecs/codec_registry.h"
#include "qccl/codecs/powersgd.h"
#include "qccl/codecs/powersgd_math.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

constexpr double kUnit = 0x1p-24;  // fp32's unit roundoff

TensorLayout layout_of(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& ts) {
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& [name, shape] : ts) {
    names.push_back(name);
    shapes.push_back(shape);
  }
  return TensorLayout::of_shapes(names, shapes);
}

// Matrices (a conv-like 4-D one among them), vectors, a matrix too small to
// compress, and an empty one.
TensorLayout mixed_layout() {
  return layout_of({{"conv.weight", {16, 4, 3, 3}},
                    {"conv.bias", {16}},
                    {"fc1.weight", {60, 50}},
                    {"fc1.bias", {60}},
                    {"tiny.weight", {3, 4}},
                    {"empty.weight", {0, 7}},
                    {"fc2.weight", {10, 60}},
                    {"scale", {}}});
}

double squared_distance(std::span<const float> a, std::span<const double> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

// --- specs, shapes and sizes ---

TEST(PowerSgdTest, SpecsAreCanonicalAndValidated) {
  const auto codec = make_codec("powersgd");
  EXPECT_EQ(codec->spec(), "powersgd:rank=2,warm_start=on,ef=on,min_rate=2");
  EXPECT_EQ(make_codec(codec->spec())->spec(), codec->spec());
  EXPECT_EQ(make_codec("powersgd:min_rate=0.5,ef=off,rank=7,warm_start=off")->spec(),
            "powersgd:rank=7,warm_start=off,ef=off,min_rate=0.5");
  EXPECT_FALSE(codec->unbiased());
  EXPECT_EQ(codec->aggregation(), Aggregation::compressed_domain);
  EXPECT_TRUE(codec->supports(CodecOperation::allreduce_mean));
  EXPECT_FALSE(codec->supports(CodecOperation::reduce_scatter_mean));
  EXPECT_FALSE(codec->supports(CodecOperation::allgather));
  EXPECT_TRUE(codec->has_native_equivalent());
  const auto error_of = [](const std::string& spec) {
    try {
      make_codec(spec);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_THAT(error_of("powersgd:rank=0"), HasSubstr("give a number in [1, 64]"));
  EXPECT_THAT(error_of("powersgd:rank=65"), HasSubstr("give a number in [1, 64]"));
  EXPECT_THAT(error_of("powersgd:rank=2.5"), HasSubstr("whole number"));
  EXPECT_THAT(error_of("powersgd:warm_start=yes"), HasSubstr("valid values: on, off"));
  EXPECT_THAT(error_of("powersgd:ef=1"), HasSubstr("valid values: on, off"));
  EXPECT_THAT(error_of("powersgd:min_rate=-1"), HasSubstr("min_rate=-1 is not valid"));
  EXPECT_THAT(error_of("powersgd:bits=8"), HasSubstr("has no parameter 'bits'"));
}

TEST(PowerSgdTest, CompressesMatricesThatShrinkByMoreThanTheMinimumRate) {
  const PowerSgdConfig config;  // rank 2, min_rate 2
  auto shape_of = [&](std::vector<std::int64_t> shape, const PowerSgdConfig& c) {
    TensorSlice t{"t", shape, 0, 1};
    for (auto d : shape) t.elements *= static_cast<std::size_t>(d);
    return powersgd_shape(t, c);
  };
  const auto conv = shape_of({16, 4, 3, 3}, config);
  EXPECT_TRUE(conv.compressed);
  EXPECT_EQ(conv.rows, 16u);
  EXPECT_EQ(conv.cols, 36u);
  EXPECT_EQ(conv.rank, 2u);
  EXPECT_FALSE(shape_of({1000}, config).compressed);      // vectors never
  EXPECT_FALSE(shape_of({}, config).compressed);          // nor scalars
  EXPECT_FALSE(shape_of({0, 7}, config).compressed);      // nor empty matrices
  EXPECT_FALSE(shape_of({1, 1000}, config).compressed);   // 1000 < 2·1·1001
  EXPECT_FALSE(shape_of({3, 4}, config).compressed);      // 12 < 2·2·7
  // n·m = 64 = min_rate·r·(n + m): no gain beyond the rate, as PyTorch's rule.
  EXPECT_FALSE(shape_of({8, 8}, config).compressed);
  EXPECT_TRUE(shape_of({8, 9}, config).compressed);
  PowerSgdConfig any = config;
  any.min_rate = 0;
  EXPECT_TRUE(shape_of({3, 4}, any).compressed);
  any.rank = 64;
  EXPECT_EQ(shape_of({3, 4}, any).rank, 3u);  // min(n, m, r)
}

TEST(PowerSgdTest, WireBytesAreOneRanksFactorsAndUncompressedTensors) {
  auto codec = make_codec("powersgd");
  EXPECT_EQ(codec->wire_bytes(1000), 4000u);  // no layout: one vector, uncompressed
  const TensorLayout layout = mixed_layout();
  codec->set_layout(layout);
  // conv 2·(16+36), fc1 2·(60+50), fc2 2·(10+60); uncompressed 16+60+12+0+1.
  const std::size_t factors = 2 * (16 + 36) + 2 * (60 + 50) + 2 * (10 + 60);
  EXPECT_EQ(codec->wire_bytes(layout.total()), 4 * (factors + 16 + 60 + 12 + 0 + 1));
  EXPECT_EQ(codec->wire_bytes(layout.total() + 1), 4 * (layout.total() + 1));
  EXPECT_TRUE(std::isinf(codec->max_abs_error(1.0, 4, Algorithm::ring)));
  // Nothing compressed: exactly the fp32 mean, with its bound.
  auto vectors = make_codec("powersgd");
  vectors->set_layout(layout_of({{"a", {100}}, {"b", {3, 4}}}));
  EXPECT_EQ(vectors->max_abs_error(1.0, 4, Algorithm::ring),
            make_codec("fp32")->max_abs_error(1.0, 4, Algorithm::ring));
  EXPECT_EQ(make_codec("powersgd")->max_abs_error(1.0, 4, Algorithm::ring),
            make_codec("fp32")->max_abs_error(1.0, 4, Algorithm::ring));
}

// --- the linear algebra ---

TEST(PowerSgdTest, ProductsMatchAPlainReference) {
  const std::size_t rows = 13, cols = 21, r = 3;
  const auto m = make_vector(rows * cols, [](std::size_t i) { return noise(1, i); });
  const auto q = make_vector(r * cols, [](std::size_t i) { return noise(2, i); });
  const auto p_in = make_vector(r * rows, [](std::size_t i) { return noise(3, i); });
  std::vector<float> p(r * rows), qt(r * cols), row(cols);
  std::vector<double> work;
  powersgd::multiply(m, rows, cols, q, r, p);
  powersgd::multiply_transposed(m, rows, cols, p_in, r, qt, work);
  for (std::size_t k = 0; k < r; ++k) {
    for (std::size_t i = 0; i < rows; ++i) {
      double s = 0;
      for (std::size_t j = 0; j < cols; ++j) s += double(m[i * cols + j]) * q[k * cols + j];
      EXPECT_EQ(p[k * rows + i], static_cast<float>(s));
    }
    for (std::size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::size_t i = 0; i < rows; ++i) s += double(m[i * cols + j]) * p_in[k * rows + i];
      EXPECT_NEAR(qt[k * cols + j], s, 4 * kUnit * rows);
    }
  }
  for (std::size_t i = 0; i < rows; ++i) {
    powersgd::product_row(p_in, rows, i, q, cols, r, row, work);
    for (std::size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < r; ++k) s += double(p_in[k * rows + i]) * q[k * cols + j];
      EXPECT_EQ(row[j], static_cast<float>(s));
    }
  }
}

// Orthonormality of the nonzero columns among `count` of `length`.
void expect_orthonormal(std::span<const float> columns, std::size_t count, std::size_t length) {
  for (std::size_t a = 0; a < count; ++a) {
    for (std::size_t b = 0; b < count; ++b) {
      double s = 0, na = 0;
      for (std::size_t j = 0; j < length; ++j) {
        s += double(columns[a * length + j]) * columns[b * length + j];
        na += double(columns[a * length + j]) * columns[a * length + j];
      }
      if (na == 0) continue;  // a zero column
      EXPECT_NEAR(s, a == b ? 1.0 : 0.0, 8 * kUnit * std::sqrt(double(length)))
          << "columns " << a << ", " << b;
    }
  }
}

// Columns orthonormal to fp32 precision, also when nearly or exactly
// dependent; a zero column stays zero.
TEST(PowerSgdTest, OrthonormalisedColumnsAreOrthonormal) {
  const std::size_t length = 50, count = 5;
  auto columns = make_vector(length * count, [](std::size_t i) { return noise(4, i); });
  for (std::size_t j = 0; j < length; ++j) {
    columns[2 * length + j] = columns[j] * (1.0f + 1e-6f * noise(5, j));  // ≈ column 0
    columns[3 * length + j] = 0.0f;
    columns[4 * length + j] = columns[length + j];  // = column 1
  }
  std::vector<double> work;
  EXPECT_EQ(powersgd::orthonormalise(columns, count, length, work), 1u);
  for (std::size_t j = 0; j < length; ++j) ASSERT_EQ(columns[3 * length + j], 0.0f);
  expect_orthonormal(columns, count, length);
}

// --- steps ---

// Every rank's input M_i = A·B_iᵀ with one A (n × r) for all ranks: each M_i,
// and their mean, lie in the r-dimensional column space of A, which P = Σ
// M_i·Q spans; so P̂·P̂ᵀ·M_i = M_i, the result is the exact mean and every
// rank's own part is its input, up to rounding. Small integers make every
// M_i exact in fp32, so only the codec's arithmetic errs: P's m-term dot
// products and its sum over W ranks, the orthonormalisation, Q's n-term
// sums and the products — about one unit of rounding per term, so every
// element is within 2·(n + m + W)·u·max|M| for the largest matrix (n = 40,
// m = 30; the errors seen are below a tenth of that).
TEST(PowerSgdTest, ExactOnInputsOfRankRSharingOneColumnSpace) {
  for (const auto& [spec, r] : {std::pair<std::string, std::size_t>{"powersgd:ef=off", 2},
                                 {"powersgd:rank=3", 3}, {"powersgd:rank=1", 1}}) {
    for (int ranks : {1, 2, 3, 4}) {
      run_world(ranks, [&](Communicator& comm) {
        auto codec = make_codec(spec, {.seed = 3, .bucket = 1});
        const TensorLayout layout = layout_of({{"w", {40, 30}}, {"b", {30}}, {"v", {24, 4, 3}}});
        codec->set_layout(layout);
        std::vector<float> input(layout.total());
        std::vector<double> mean(layout.total(), 0.0);
        double largest = 0;
        for (const TensorSlice& t : layout.tensors(input.size())) {
          const std::size_t n = static_cast<std::size_t>(t.shape[0]), m = t.elements / n;
          auto small = [](int who, std::size_t i) { return std::round(3 * noise(who, i)); };
          for (int q = 0; q < ranks; ++q) {
            for (std::size_t i = 0; i < n; ++i) {
              for (std::size_t j = 0; j < m; ++j) {
                double x = 0;
                for (std::size_t k = 0; k < r; ++k) {
                  x += t.shape.size() == 1 ? (k == 0 ? small(10 + q, i) : 0.0)
                                           : small(1, i * r + k) * small(20 + q, j * r + k);
                }
                if (q == comm.rank()) input[t.offset + i * m + j] = static_cast<float>(x);
                mean[t.offset + i * m + j] += x / ranks;
                largest = std::max(largest, std::abs(x));
              }
            }
          }
        }
        std::vector<float> data = input, own(input.size());
        codec->allreduce_mean(comm, data, {}, own);
        const double tolerance = 2 * (40 + 30 + ranks) * kUnit * largest;
        for (std::size_t i = 0; i < data.size(); ++i) {
          ASSERT_NEAR(data[i], mean[i], tolerance) << spec << " on " << ranks << " ranks, " << i;
          ASSERT_NEAR(own[i], input[i], tolerance) << spec << " own, " << i;
        }
      });
    }
  }
}

// Tensors the codec does not compress (vectors, a matrix too small, a
// scalar) get the fp32 mean: on small integers exactly its closed form, and
// the fp32 codec's bits.
TEST(PowerSgdTest, UncompressedTensorsAreThePlainFp32Mean) {
  const TensorLayout layout = mixed_layout();
  for (int ranks : {1, 2, 3, 4, 7}) {
    run_world(ranks, [&](Communicator& comm) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
        auto codec = make_codec("powersgd", {.seed = 8});
        codec->set_layout(layout);
        auto fp32 = make_codec("fp32");
        CollectiveOptions options;
        options.algorithm = algorithm;
        options.chunk_bytes = 256;
        for (int step = 0; step < 2; ++step) {
          const auto input = make_vector(layout.total(), [&](std::size_t i) {
            return pattern(comm.rank() + step, i);
          });
          auto data = input, plain = input;
          codec->allreduce_mean(comm, data, options);
          fp32->allreduce_mean(comm, plain, options);
          for (const TensorSlice& t : layout.tensors(input.size())) {
            if (powersgd_shape(t, PowerSgdConfig{}).compressed) continue;
            for (std::size_t i = t.offset; i < t.offset + t.elements; ++i) {
              const float exact = (pattern_sum(ranks + step, i) - pattern_sum(step, i)) /
                                  static_cast<float>(ranks);
              ASSERT_EQ(data[i], exact) << t.name << " element " << i;
              ASSERT_EQ(data[i], plain[i]) << t.name << " element " << i;
            }
          }
        }
      }
    });
  }
}

// On one rank the result is P̂·P̂ᵀ·M, the projection of M on P̂'s columns:
// orthogonal to what it leaves out, ⟨M − R, R⟩ = 0, and no larger than M.
TEST(PowerSgdTest, TheResultIsAnOrthogonalProjection) {
  run_world(1, [&](Communicator& comm) {
    for (const std::string spec : {"powersgd:ef=off", "powersgd:rank=5,ef=off"}) {
      auto codec = make_codec(spec);
      const TensorLayout layout = layout_of({{"w", {70, 45}}});
      codec->set_layout(layout);
      for (int step = 0; step < 3; ++step) {
        const auto m = make_vector(layout.total(), [&](std::size_t i) { return noise(step, i); });
        auto r = m;
        codec->allreduce_mean(comm, r);
        double cross = 0, left = 0, kept = 0, whole = 0;
        for (std::size_t i = 0; i < m.size(); ++i) {
          cross += double(m[i] - r[i]) * r[i];
          left += double(m[i] - r[i]) * (m[i] - r[i]);
          kept += double(r[i]) * r[i];
          whole += double(m[i]) * m[i];
        }
        EXPECT_NEAR(cross, 0.0, 64 * kUnit * whole) << spec << " step " << step;
        EXPECT_NEAR(left + kept, whole, 64 * kUnit * whole) << spec << " step " << step;
        EXPECT_GT(kept, 0.0);
      }
    }
  });
}

// Over every rank count and algorithm, on a layout of matrices and vectors:
// identical bits on every rank, and the mean over ranks of the own parts is
// the result (mean_i P̂·P̂ᵀ·M_i = P̂·Q̄ᵀ) up to rounding.
TEST(PowerSgdTest, EveryRankEndsWithTheSameBitsAndOwnPartsAverageToTheResult) {
  const TensorLayout layout = mixed_layout();
  for (int ranks : {1, 2, 3, 4, 7}) {
    run_world(ranks, [&](Communicator& comm) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
        for (const std::string spec : {"powersgd", "powersgd:rank=4,warm_start=off,ef=off"}) {
          auto codec = make_codec(spec, {.seed = 2, .bucket = 5});
          codec->set_layout(layout);
          CollectiveOptions options;
          options.algorithm = algorithm;
          options.chunk_bytes = 512;
          for (int step = 0; step < 3; ++step) {
            auto data = make_vector(layout.total(), [&](std::size_t i) {
              return noise(comm.rank() + 11 * step, i);
            });
            std::vector<float> own(data.size());
            codec->allreduce_mean(comm, data, options, own);
            expect_identical_across_ranks(comm, data);
            std::vector<double> own_mean(own.begin(), own.end());
            for (double& x : own_mean) x /= ranks;
            allreduce_values<double>(comm.transport(), own_mean, ReduceOp::sum, kTestTimeout);
            for (std::size_t i = 0; i < data.size(); ++i) {
              ASSERT_NEAR(data[i], own_mean[i], 1e-5)
                  << spec << " " << to_string(algorithm) << " step " << step << " element " << i;
            }
          }
        }
      }
    });
  }
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
