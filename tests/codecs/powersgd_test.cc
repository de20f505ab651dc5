// PowerSGD (Vogels et al. 2019): exact on inputs of rank r that share one
// column space, uncompressed tensors equal to the fp32 mean, orthonormal
// factors, identical bits on every rank, and specs, shapes and wire sizes.
// Its state across steps: powersgd_state_test.cc.
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

constexpr double kUnit = 0x1p-24;  // fp32's unit roundoff

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

}  // namespace
}  // namespace qccl::test
