#include "codec_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "collective_checks.h"
#include "patterns.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

constexpr CodecSettings kSettings{.seed = 5, .bucket = 2};

struct Run {
  std::vector<float> output, own;
  double bound = 0;  // the codec's worst-case error for the second step
};

// Two steps of `operation`, the SGD update of the exact mean fed in between
// (so IntSGD's second step is an integer one); returns the second step's
// output and own contribution, and the error bound that step had.
Run run_twice(Codec& codec, Communicator& comm, CodecOperation operation,
              const std::vector<float>& input, const std::vector<float>& exact_mean,
              const CollectiveOptions& options, double norm) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  Run run;
  for (int step = 0; step < 2; ++step) {
    run.bound = codec.error_bound(norm, comm.size(), options.algorithm, operation);
    run.own.assign(input.size(), -7.0f);
    switch (operation) {
      case CodecOperation::allreduce_mean:
        run.output = input;
        codec.allreduce_mean(comm, run.output, options, run.own);
        break;
      case CodecOperation::reduce_scatter_mean: {
        const auto block =
            codec.reduce_scatter_blocks(input.size(), comm.size())[static_cast<std::size_t>(comm.rank())];
        run.output.assign(block.count, -7.0f);
        codec.reduce_scatter_mean(comm, input, run.output, options, run.own);
        break;
      }
      case CodecOperation::allgather:
        run.output.assign(input.size() * n, -7.0f);
        codec.allgather(comm, input, run.output, options, run.own);
        break;
    }
    if (step == 0) feed_sgd_step(codec, exact_mean);
  }
  return run;
}

// Whether every rank's `values` are within `tolerance` of `expected`.
void expect_within(std::span<const float> values, std::span<const double> expected,
                   double tolerance, const std::string& what) {
  if (!std::isfinite(tolerance)) return;  // no worst-case bound (IntDIANA, error feedback)
  std::size_t outside = 0, first = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!(std::abs(values[i] - expected[i]) <= tolerance)) {
      if (outside++ == 0) first = i;
    }
  }
  EXPECT_EQ(outside, 0u) << what << ": " << outside << " of " << values.size()
                         << " elements beyond " << tolerance << ", first " << first << " ("
                         << (outside ? values[first] : 0.0f) << " vs "
                         << (outside ? expected[first] : 0.0) << ")";
}

// Finite input never gives Inf or NaN, whatever its magnitude.
void expect_finite(std::span<const float> values, const std::string& what) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << values.size()
                     << " elements not finite, first " << first << " ("
                     << (bad ? values[first] : 0.0f) << ")";
}

bool bitwise_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

void expect_refused(Communicator& comm, Codec& codec, CodecOperation operation,
                    std::size_t count) {
  std::vector<float> input(count, 1.0f), output(count * static_cast<std::size_t>(comm.size()));
  try {
    switch (operation) {
      case CodecOperation::allreduce_mean: codec.allreduce_mean(comm, input); break;
      case CodecOperation::reduce_scatter_mean: codec.reduce_scatter_mean(comm, input, output); break;
      case CodecOperation::allgather: codec.allgather(comm, input, output); break;
    }
    ADD_FAILURE() << codec.spec() << " ran an operation it does not offer";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(codec.spec()));
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("has no " + std::string(to_string(operation))));
  }
  // Refused before anything moved: the communicator is still in step.
  std::vector<float> ones(3, 1.0f);
  Fp32Sum sum;
  allreduce(comm, ones, sum);
  EXPECT_EQ(ones[0], static_cast<float>(comm.size()));
}

// The exact results the ranks' inputs call for: the mean over ranks, the
// largest magnitude and the sum of squares.
struct ExactInputs {
  std::vector<double> mean;
  double largest = 0, squares = 0;
};

ExactInputs exact_inputs(int n, std::size_t count, InputValue value) {
  ExactInputs exact;
  exact.mean.assign(count, 0.0);
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < count; ++i) {
      const double x = value(q, i);
      exact.mean[i] += x / n;
      exact.largest = std::max(exact.largest, std::abs(x));
      exact.squares += x * x;
    }
  }
  return exact;
}

// Without a bound the value checks cannot run: only codecs known to have
// none may lack one (error feedback's steps are checked against its inner
// codec's in error_feedback_test.cc; adaptive IntSGD's bound is lost when
// its scale may clip; EF-SignSGD, OneBit and a scheme with error feedback
// of its own, ef=on, are error feedback too; DGC carries past steps into the
// result; signSGD's and SigNUM's vote is a direction, not an approximation
// of the mean).
void expect_bound_known(const std::string& spec, const Codec& codec, double bound) {
  const auto starts = [&](std::string_view prefix) { return spec.rfind(prefix, 0) == 0; };
  const std::string canonical = codec.spec();
  EXPECT_TRUE(std::isfinite(bound) || starts("ef(") || starts("intdiana") ||
              spec == "intsgd" || starts("intsgd:") || spec == "signsgd" ||
              starts("signum") || spec == "ef-signsgd" || spec == "onebit" ||
              canonical.find(",ef=on") != std::string::npos || canonical.rfind("dgc:", 0) == 0)
      << spec << " has no error bound here";
}

// Rank r's block is within the bound of its mean and, where the paths agree,
// bitwise the allreduce's block.
void check_reduce_scatter_block(Communicator& comm, const std::string& spec, Codec& codec,
                                const Run& run, const std::vector<double>& mean,
                                const std::vector<float>& input, const CollectiveOptions& options,
                                double norm) {
  const auto blocks = codec.reduce_scatter_blocks(input.size(), comm.size());
  const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
  expect_within(run.output, std::span<const double>(mean).subspan(mine.first, mine.count),
                run.bound, "the block's mean");
  const bool same_path = options.algorithm == Algorithm::ring ||
                         codec.aggregation() == Aggregation::allgather_decode;
  if (!same_path) return;
  auto twin = make_codec(spec, kSettings);
  const std::vector<float> mean_f(mean.begin(), mean.end());
  const Run whole =
      run_twice(*twin, comm, CodecOperation::allreduce_mean, input, mean_f, options, norm);
  EXPECT_TRUE(bitwise_equal(run.output, std::span<const float>(whole.output)
                                            .subspan(mine.first, mine.count)))
      << "the reduce-scatter block differs from the allreduce's";
  EXPECT_TRUE(bitwise_equal(run.own, whole.own)) << "own contributions differ";
}

// Every rank's shard within the bound, the same everywhere, and this rank's
// own decoded shard the one the others received.
void check_allgather_shards(Communicator& comm, const Run& run, std::size_t count,
                            InputValue value) {
  const int n = comm.size(), r = comm.rank();
  std::vector<double> shards(count * static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < count; ++i) {
      shards[static_cast<std::size_t>(q) * count + i] = value(q, i);
    }
  }
  expect_within(run.output, shards, run.bound, "the shards");
  expect_identical_across_ranks(comm, run.output);
  EXPECT_TRUE(bitwise_equal(run.own, std::span<const float>(run.output)
                                         .subspan(static_cast<std::size_t>(r) * count, count)))
      << "this rank's own decoded shard differs from what the ranks received";
}

// The mean over ranks of the own contributions estimates the exact mean
// as closely as the result does.
void check_own_contributions(Communicator& comm, const Run& run, const ExactInputs& exact) {
  std::vector<double> own_mean(run.own.begin(), run.own.end());
  for (double& x : own_mean) x /= comm.size();
  allreduce_values<double>(comm.transport(), own_mean, ReduceOp::sum, comm.options().timeout);
  std::vector<float> own_mean_f(own_mean.begin(), own_mean.end());
  expect_within(own_mean_f, exact.mean, run.bound + 1e-6 * exact.largest,
                "the mean of the own contributions");
}

}  // namespace

void check_codec_operation(Communicator& comm, const std::string& spec,
                           CodecOperation operation, std::size_t count, Algorithm algorithm,
                           InputValue value) {
  if (value == nullptr) value = noise;
  const int n = comm.size(), r = comm.rank();
  const std::string what = spec + " " + std::string(to_string(operation)) + " on " +
                           std::to_string(n) + " ranks, " + std::to_string(count) +
                           " elements, " + std::string(to_string(algorithm));
  SCOPED_TRACE(what);
  auto codec = make_codec(spec, kSettings);
  if (!codec->supports(operation)) {
    expect_refused(comm, *codec, operation, count);
    return;
  }
  CollectiveOptions options;
  options.algorithm = algorithm;
  options.chunk_bytes = 4096;  // several chunks per segment at the larger sizes
  const auto input = make_vector(count, [&](std::size_t i) { return value(r, i); });
  const ExactInputs exact = exact_inputs(n, count, value);
  std::vector<float> mean_f(exact.mean.begin(), exact.mean.end());
  const double norm =
      codec->norm_kind() == NormKind::inf ? exact.largest : std::sqrt(exact.squares);
  const Run run = run_twice(*codec, comm, operation, input, mean_f, options, norm);
  expect_finite(run.output, "the result");
  expect_finite(run.own, "this rank's own contribution");
  expect_bound_known(spec, *codec, run.bound);

  switch (operation) {
    case CodecOperation::allreduce_mean:
      expect_within(run.output, exact.mean, run.bound, "the mean");
      expect_identical_across_ranks(comm, run.output);
      break;
    case CodecOperation::reduce_scatter_mean:
      check_reduce_scatter_block(comm, spec, *codec, run, exact.mean, input, options, norm);
      break;
    case CodecOperation::allgather:
      check_allgather_shards(comm, run, count, value);
      return;
  }
  check_own_contributions(comm, run, exact);
}

void check_fp32_operations_exact(Communicator& comm, std::size_t count, Algorithm algorithm) {
  const int n = comm.size(), r = comm.rank();
  auto codec = make_codec("fp32");
  CollectiveOptions options;
  options.algorithm = algorithm;
  options.chunk_bytes = 4096;
  const auto input = make_vector(count, [&](std::size_t i) { return pattern(r, i); });
  // The mean of small integers: (n+1)/2·(i mod 13 − 6), exact in fp32.
  auto mean = [&](std::size_t i) { return pattern_sum(n, i) / static_cast<float>(n); };
  auto data = input;
  codec->allreduce_mean(comm, data, options);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(data[i], mean(i)) << "allreduce " << i;
  const Range mine = codec->reduce_scatter_blocks(count, n)[static_cast<std::size_t>(r)];
  std::vector<float> block(mine.count);
  codec->reduce_scatter_mean(comm, input, block, options);
  for (std::size_t i = 0; i < block.size(); ++i) {
    ASSERT_EQ(block[i], mean(mine.first + i)) << "reduce-scatter " << i;
  }
  std::vector<float> gathered(count * static_cast<std::size_t>(n));
  codec->allgather(comm, input, gathered, options);
  for (std::size_t i = 0; i < gathered.size(); ++i) {
    ASSERT_EQ(gathered[i], pattern(static_cast<int>(i / count), i % count)) << "allgather " << i;
  }
}

void check_codec_resumes_exactly(Communicator& comm, const std::string& spec,
                                 const TensorLayout& layout, int steps, bool expect_state) {
  const std::size_t d = layout.total();
  auto input = [&](int step) {
    return make_vector(d, [&](std::size_t i) { return noise(comm.rank() + 5 * step, i); });
  };
  auto run = [&](Codec& codec, int first, int last, std::vector<float>& data) {
    for (int step = first; step < last; ++step) {
      data = input(step);
      codec.allreduce_mean(comm, data);
      expect_identical_across_ranks(comm, data);
      feed_sgd_step(codec, data, 0.1);
    }
  };
  auto fresh = [&] {
    auto codec = make_codec(spec, {.seed = 4});
    codec->set_layout(layout);
    return codec;
  };
  std::vector<float> expected, resumed_result;
  run(*fresh(), 0, steps, expected);
  auto first = fresh();
  run(*first, 0, steps / 2, resumed_result);
  const auto saved = first->save_state();
  if (expect_state) {
    EXPECT_FALSE(saved.empty()) << spec << ": no state saved";
  }
  auto resumed = fresh();
  resumed->load_state(saved);
  resumed->set_step(first->step());
  run(*resumed, steps / 2, steps, resumed_result);
  EXPECT_EQ(resumed_result, expected) << spec << ": the resumed run differs";
}

}  // namespace qccl::test
