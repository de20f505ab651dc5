// Shared statistical check for randomized codecs: unbiasedness end to end.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"

namespace qccl::test {

// The ranks' inputs as the variance bounds see them: ||x||²_{2,2} = the sum
// over ranks of ||x_r||², and the exact mean (the reference of the errors).
struct RankInputs {
  double squared_norm = 0;
  std::vector<double> mean;
};
inline RankInputs rank_inputs(int ranks, std::size_t d,
                              const std::function<std::vector<float>(int)>& input) {
  RankInputs inputs{0, std::vector<double>(d, 0.0)};
  for (int r = 0; r < ranks; ++r) {
    const auto x = input(r);
    for (std::size_t i = 0; i < d; ++i) {
      inputs.squared_norm += static_cast<double>(x[i]) * x[i];
      inputs.mean[i] += x[i] / static_cast<double>(ranks);
    }
  }
  return inputs;
}

// Rank 0's results of `rounds` successive allreduce_mean calls (one codec
// instance per rank, so the step advances, laid out as `layout`), each on
// input(rank); expects bitwise identical results on every rank in every
// round.
inline std::vector<std::vector<float>> collect_rounds(
    const std::string& spec, int ranks, Algorithm algorithm,
    const std::function<std::vector<float>(int)>& input, int rounds,
    std::size_t chunk_bytes = std::size_t{1} << 20, CodecSettings settings = {.seed = 77, .bucket = 1},
    const TensorLayout& layout = {}) {
  std::vector<std::vector<float>> results;
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, settings);
    codec->set_layout(layout);
    CollectiveOptions options;
    options.algorithm = algorithm;
    options.chunk_bytes = chunk_bytes;
    const auto x = input(comm.rank());
    std::uint64_t running_hash = 0;  // wraps around: unsigned
    for (int round = 0; round < rounds; ++round) {
      auto data = x;
      codec->allreduce_mean(comm, data, options);
      running_hash = running_hash * 31 + static_cast<std::uint64_t>(bytes_hash(data));
      if (comm.rank() == 0) results.push_back(std::move(data));
    }
    std::vector<float> carrier(2);
    std::memcpy(carrier.data(), &running_hash, sizeof running_hash);
    expect_identical_across_ranks(comm, carrier);
  });
  return results;
}

// Per round, the sum over elements of (result - reference)^2.
inline std::vector<double> squared_errors(const std::vector<std::vector<float>>& results,
                                          const std::vector<double>& reference) {
  std::vector<double> errors;
  for (const auto& result : results) {
    double e = 0;
    for (std::size_t i = 0; i < result.size(); ++i) e += (result[i] - reference[i]) * (result[i] - reference[i]);
    errors.push_back(e);
  }
  return errors;
}

struct SampleMean {
  double mean = 0;
  double standard_error = 0;  // sample sd / sqrt(count)
};

inline SampleMean sample_mean(const std::vector<double>& values) {
  const auto count = static_cast<double>(values.size());
  double mean = 0, m2 = 0;
  for (double v : values) mean += v / count;
  for (double v : values) m2 += (v - mean) * (v - mean) / (count - 1);
  return {mean, std::sqrt(m2 / count)};
}

// Expects `results` (rounds of one computation) unbiased against `exact`:
// each element's sample mean within 5 sample standard errors of the exact
// value; and, to catch a bias too small to show in one element, two sums
// over all elements of the errors of the means — plain (a drift toward +inf)
// and signed by the exact value (a drift in magnitude) — each within 5
// standard deviations, sqrt(sum of var_i / rounds). These sums are normal by
// the central limit theorem over elements even when each element's output is
// a skewed two-point variable (sparse inputs), where a chi-square of
// per-element z-scores with estimated variances would not be. Elements
// with no variation in the samples are handled as explained inside.
inline void expect_unbiased(const std::string& what, const std::vector<std::vector<float>>& results,
                            const std::vector<double>& exact) {
  const std::size_t d = exact.size();
  const auto rounds = static_cast<double>(results.size());
  std::vector<double> m1(d, 0.0), m2(d, 0.0);
  for (const auto& result : results) {
    for (std::size_t i = 0; i < d; ++i) {
      m1[i] += result[i];
      m2[i] += static_cast<double>(result[i]) * result[i];
    }
  }
  std::vector<double> means(d), errors(d);
  double drift = 0, magnitude_drift = 0, total_variance = 0, slack = 0;
  for (std::size_t i = 0; i < d; ++i) {
    means[i] = m1[i] / rounds;
    const double variance =
        std::max(m2[i] / rounds - means[i] * means[i], 0.0) * rounds / (rounds - 1);
    errors[i] = std::sqrt(variance / rounds);
    drift += means[i] - exact[i];
    magnitude_drift += (exact[i] < 0 ? -1.0 : 1.0) * (means[i] - exact[i]);
    total_variance += variance / rounds;
    slack += 1e-6 * std::abs(exact[i]) + 1e-30;  // fp32 decode
  }
  // An element whose round-up probability p is below ~1/rounds may show no
  // variation at all (its sample standard error is 0) while its mean is off
  // by p times a level; such elements are held to 5 times the median
  // standard error instead (with p < 25/rounds, as all-equal samples make
  // near certain, the deviation is far below it).
  std::vector<double> sorted = errors;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(d / 2), sorted.end());
  const double median_error = d > 0 ? sorted[d / 2] : 0.0;
  for (std::size_t i = 0; i < d; ++i) {
    const double se = errors[i] > 0 ? errors[i] : median_error;
    const double rounding = 1e-6 * std::abs(exact[i]) + 1e-30;
    EXPECT_NEAR(means[i], exact[i], 5 * se + rounding) << what << ", element " << i;
  }
  // A computation that never varies (an exact path taken by mistake)
  // would pass everything above without testing anything.
  EXPECT_GT(total_variance, 0.0) << what << ": no element varies across rounds";
  const double sd = std::sqrt(total_variance);
  EXPECT_LE(std::abs(drift), 5 * sd + slack) << what << ": the means drift jointly";
  EXPECT_LE(std::abs(magnitude_drift), 5 * sd + slack) << what << ": magnitudes drift jointly";
}

// Runs `rounds` independent allreduce_mean calls of `spec` on `ranks` ranks
// (input(rank) each time) and expects them unbiased (expect_unbiased).
inline void expect_unbiased_end_to_end(const std::string& spec, int ranks, Algorithm algorithm,
                                       const std::function<std::vector<float>(int)>& input,
                                       int rounds, std::size_t chunk_bytes = 32) {
  const std::size_t d = input(0).size();
  std::vector<double> exact(d, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const auto x = input(r);
    for (std::size_t i = 0; i < d; ++i) exact[i] += x[i] / static_cast<double>(ranks);
  }
  expect_unbiased(spec, collect_rounds(spec, ranks, algorithm, input, rounds, chunk_bytes), exact);
}

}  // namespace qccl::test
