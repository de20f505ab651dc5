// The costs of MergeComp's model (Assumption 5): the fit recovers known
// linear costs exactly, and the measurement runs the codec on a real
// communicator with the same results on every rank. No test asserts how fast
// anything is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/scheduling/group_costs.h"

namespace qccl::test {
namespace {

// Samples made by the model itself: h = B_h + γ_h·x; a ring on `ranks` ranks
// sending 2(n − 1)/n·4 bytes per element in 2(n − 1) steps at α s per step
// and β bytes/s.
std::vector<GroupCostSample> model_samples(double fixed_h, double per_h, double alpha, double beta,
                                           int ranks) {
  const double wire = 2.0 * (ranks - 1) / ranks * 4, steps = 2.0 * (ranks - 1);
  std::vector<GroupCostSample> samples;
  for (std::size_t x = 1024; x <= (std::size_t{1} << 22); x *= 4) {
    const double sent = wire * static_cast<double>(x);
    const double h = fixed_h + per_h * static_cast<double>(x);
    samples.push_back({x, h, steps * alpha + sent / beta, sent});
  }
  return samples;
}

void expect_relative(double actual, double expected, double tolerance = 1e-9) {
  EXPECT_NEAR(actual, expected, tolerance * std::abs(expected)) << "expected " << expected;
}

TEST(GroupCostFitTest, RecoversExactLinearCosts) {
  const double fixed_h = 2e-5, per_h = 3e-9, alpha = 1e-5, beta = 1e9;
  const auto m = fit_group_costs(model_samples(fixed_h, per_h, alpha, beta, 4), Algorithm::ring, 4);
  expect_relative(m.costs.codec.fixed, fixed_h);
  expect_relative(m.costs.codec.per_element, per_h);
  expect_relative(m.network.alpha, alpha);
  expect_relative(m.network.beta, beta);
  expect_relative(m.wire_bytes_per_element, 6);               // 2·3/4·4 bytes
  expect_relative(m.costs.communication.fixed, 6 * alpha);    // B_g = 2(n − 1)·α
  expect_relative(m.costs.communication.per_element, 6 / beta);  // γ_g = wire/β
  EXPECT_EQ(m.samples.size(), 7u);
}

TEST(GroupCostFitTest, HalvingDoublingTakesFewerSteps) {
  // 8 ranks: 2·log2(8) = 6 steps instead of the ring's 14.
  auto samples = model_samples(0, 1e-9, 0, 2e9, 8);
  for (auto& s : samples) s.communication_seconds += 6 * 4e-6;
  const auto m = fit_group_costs(samples, Algorithm::halving_doubling, 8);
  expect_relative(m.network.alpha, 4e-6);
  expect_relative(m.costs.communication.fixed, 6 * 4e-6);
  expect_relative(m.costs.communication.per_element, 7 / 2e9);  // 2·7/8·4 bytes at 2 GB/s
}

TEST(GroupCostFitTest, KeepsTheCodecCostsNonnegative) {
  // h = 1e-9·x − 1e-7: the free fit's B_h would be negative.
  auto samples = model_samples(0, 0, 1e-5, 1e9, 2);
  for (auto& s : samples) s.codec_seconds = 1e-9 * static_cast<double>(s.elements) - 1e-7;
  const auto clamped = fit_group_costs(samples, Algorithm::ring, 2);
  EXPECT_EQ(clamped.costs.codec.fixed, 0);
  EXPECT_GT(clamped.costs.codec.per_element, 0);
  // h shrinking with x: γ_h would be negative; the best constant is kept.
  for (auto& s : samples) s.codec_seconds = 1e-3 - 1e-11 * static_cast<double>(s.elements);
  const auto flat = fit_group_costs(samples, Algorithm::ring, 2);
  EXPECT_EQ(flat.costs.codec.per_element, 0);
  EXPECT_GT(flat.costs.codec.fixed, 0);
  // No measurable codec time at all (fp32 on one rank may record none): h = 0.
  for (auto& s : samples) s.codec_seconds = 0;
  const auto none = fit_group_costs(samples, Algorithm::ring, 2);
  EXPECT_EQ(none.costs.codec.fixed, 0);
  EXPECT_EQ(none.costs.codec.per_element, 0);
}

TEST(GroupCostFitTest, ALinkRateReplacesTheMeasuredBandwidth) {
  const auto samples = model_samples(2e-5, 3e-9, 1e-5, 1e9, 4);
  const auto m = fit_group_costs(samples, Algorithm::ring, 4, 2.5e9);
  EXPECT_EQ(m.network.beta, 2.5e9);
  expect_relative(m.network.alpha, 1e-5);  // α stays the measured one
  expect_relative(m.costs.communication.per_element, 6 / 2.5e9);
  expect_relative(m.costs.communication.fixed, 6e-5);
  EXPECT_THROW(fit_group_costs(model_samples(0, 1e-9, 0, 1e9, 4), Algorithm::ring, 4, 0.0),
               InvalidArgument);
}

// g = link part + the reductions' CPU part B_r + γ_r·x. Fitted, both parts
// come back exactly; a link rate L replaces β only, so
//   γ_g = 6/L + γ_r and B_g = 6α + B_r
// (4 ranks on a ring: 6 bytes per element and 6 steps), not 6/L alone.
TEST(GroupCostFitTest, ALinkRateKeepsTheReductionsCpuCost) {
  const double alpha = 1e-5, beta = 1e9, fixed_r = 4e-6, per_r = 2e-10;
  auto samples = model_samples(2e-5, 3e-9, alpha, beta, 4);
  for (auto& s : samples) {
    s.reduce_seconds = fixed_r + per_r * static_cast<double>(s.elements);
    s.communication_seconds += s.reduce_seconds;
  }
  const auto measured = fit_group_costs(samples, Algorithm::ring, 4);
  expect_relative(measured.network.beta, beta);
  expect_relative(measured.reduction.fixed, fixed_r);
  expect_relative(measured.reduction.per_element, per_r);
  expect_relative(measured.costs.communication.per_element, 6 / beta + per_r);
  const auto planned = fit_group_costs(samples, Algorithm::ring, 4, 2.5e9);
  expect_relative(planned.costs.communication.per_element, 6 / 2.5e9 + per_r);
  expect_relative(planned.costs.communication.fixed, 6 * alpha + fixed_r);
  // A reduction longer than the communication it is part of is refused.
  samples[0].reduce_seconds = samples[0].communication_seconds * 2;
  EXPECT_THROW(fit_group_costs(samples, Algorithm::ring, 4), InvalidArgument);
}

TEST(GroupCostFitTest, OneRankCommunicatesNothing) {
  auto samples = model_samples(1e-5, 1e-9, 0, 1e9, 2);
  for (auto& s : samples) s.sent_bytes = 0, s.communication_seconds = 1e-7;
  const auto m = fit_group_costs(samples, Algorithm::ring, 1);
  EXPECT_EQ(m.costs.communication.fixed, 0);
  EXPECT_EQ(m.costs.communication.per_element, 0);
  EXPECT_EQ(m.wire_bytes_per_element, 0);
  EXPECT_EQ(m.network.beta, std::numeric_limits<double>::infinity());
  // On two ranks the transport must have counted bytes.
  EXPECT_THROW(fit_group_costs(samples, Algorithm::ring, 2), InvalidArgument);
}

// Transfers whose times fall as the sizes grow (a loaded machine) show no
// bandwidth: g is then the latency alone, a constant, instead of a failed
// plan. 4 ranks on a ring: 6 steps, so α = the weighted mean time / 6.
TEST(GroupCostFitTest, TimesThatDoNotGrowWithTheBytesGiveAConstant) {
  auto samples = model_samples(1e-5, 1e-9, 1e-5, 1e9, 4);
  const double times[] = {4e-3, 3e-3, 2e-3};
  ASSERT_GE(samples.size(), 3u);
  samples.resize(3);
  for (std::size_t i = 0; i < 3; ++i) samples[i].communication_seconds = times[i];
  const auto m = fit_group_costs(samples, Algorithm::ring, 4);
  EXPECT_EQ(m.network.beta, std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.costs.communication.per_element, 0);
  // Σ w·t / Σ w with w = 1/t²: (1/4e-3 + 1/3e-3 + 1/2e-3) / (1/16e-6 + 1/9e-6 + 1/4e-6).
  const double mean = (250.0 + 1000.0 / 3 + 500.0) / (1 / 16e-6 + 1 / 9e-6 + 1 / 4e-6);
  expect_relative(m.costs.communication.fixed, mean);
  expect_relative(m.network.alpha, mean / 6);
}

TEST(GroupCostFitTest, RefusesTooFewOrBadSamples) {
  auto samples = model_samples(1e-5, 1e-9, 1e-5, 1e9, 2);
  EXPECT_THAT([] { fit_group_costs({}, Algorithm::ring, 2); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("at least two sizes")));
  EXPECT_THROW(fit_group_costs({samples[0]}, Algorithm::ring, 2), InvalidArgument);
  EXPECT_THROW(fit_group_costs({samples[0], samples[0]}, Algorithm::ring, 2), InvalidArgument);
  EXPECT_THROW(fit_group_costs(samples, Algorithm::ring, 0), InvalidArgument);
  samples[1].codec_seconds = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(fit_group_costs(samples, Algorithm::ring, 2), InvalidArgument);
}

// ---------------------------------------------------------------------------
// Measuring on in-process ranks.

bool same_bits(const GroupCostMeasurement& a, const GroupCostMeasurement& b) {
  if (a.samples.size() != b.samples.size()) return false;
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    const auto &x = a.samples[i], &y = b.samples[i];
    if (x.elements != y.elements || x.codec_seconds != y.codec_seconds ||
        x.communication_seconds != y.communication_seconds || x.sent_bytes != y.sent_bytes ||
        x.reduce_seconds != y.reduce_seconds) {
      return false;
    }
  }
  return a.costs.codec.fixed == b.costs.codec.fixed &&
         a.costs.codec.per_element == b.costs.codec.per_element &&
         a.costs.communication.fixed == b.costs.communication.fixed &&
         a.costs.communication.per_element == b.costs.communication.per_element &&
         a.network.alpha == b.network.alpha && a.network.beta == b.network.beta &&
         a.reduction.fixed == b.reduction.fixed &&
         a.reduction.per_element == b.reduction.per_element &&
         a.wire_bytes_per_element == b.wire_bytes_per_element;
}

TEST(GroupCostMeasureTest, EveryRankGetsTheSameFitOfFp32) {
  GroupCostOptions options;
  options.sizes = {std::size_t{1} << 14, std::size_t{1} << 17, std::size_t{1} << 20};
  options.repeats = 2;
  options.seed = 7;
  for (const int ranks : {1, 2, 3, 4}) {
    std::vector<GroupCostMeasurement> results(static_cast<std::size_t>(ranks));
    run_world(ranks, [&](Communicator& comm) {
      results[static_cast<std::size_t>(comm.rank())] = measure_group_costs(comm, options);
    });
    const GroupCostMeasurement& m = results[0];
    for (int r = 1; r < ranks; ++r) EXPECT_TRUE(same_bits(results[r], m)) << "rank " << r;
    ASSERT_EQ(m.samples.size(), 3u);
    EXPECT_EQ(m.samples[2].elements, std::size_t{1} << 20);
    EXPECT_GE(m.costs.codec.fixed, 0);
    EXPECT_GE(m.costs.codec.per_element, 0);
    if (ranks == 1) {
      EXPECT_EQ(m.samples[2].sent_bytes, 0);
      EXPECT_EQ(m.costs.communication.per_element, 0);
      continue;
    }
    // The ring sends 2(n − 1)/n of the vector: 4, 5.33, 6 bytes per element.
    const double ring_bytes = 2.0 * (ranks - 1) / ranks * 4;
    EXPECT_NEAR(m.wire_bytes_per_element, ring_bytes, 0.03 * ring_bytes) << ranks << " ranks";
    EXPECT_GT(m.costs.communication.per_element, 0) << ranks << " ranks";
    // fp32 sums what it receives: the reductions take time, within the communication's.
    EXPECT_GT(m.samples[2].reduce_seconds, 0) << ranks << " ranks";
    EXPECT_LE(m.samples[2].reduce_seconds, m.samples[2].communication_seconds);
    EXPECT_GE(m.costs.communication.fixed, 0);
    EXPECT_GT(m.network.beta, 0);
  }
}

// Codecs with per-tensor state (error feedback's residual has the size of
// the vector) are measured at every size, each on a fresh instance; the
// sparsifier sends less than fp32 would.
TEST(GroupCostMeasureTest, StatefulCodecsAreMeasuredAtEverySize) {
  GroupCostOptions options;
  options.codec = CodecSpec::parse("topk:ratio=0.01");
  options.sizes = {1024, 2226, 8192};
  options.repeats = 1;
  run_world(2, [&](Communicator& comm) {
    const auto m = measure_group_costs(comm, options);
    ASSERT_EQ(m.samples.size(), 3u);
    EXPECT_LT(m.wire_bytes_per_element, 1.0);
    EXPECT_GT(m.costs.codec.fixed + m.costs.codec.per_element, 0);
  });
}

// Given the model's tensors, each size measured is the group of the fewest
// first tensors holding it, and the codec sees that group's layout: Top-k
// with select=tensor keeps ⌈0.01·150⌉ = 2 of each of 40 tensors of 150
// (80 pairs), select=group ⌈0.01·6000⌉ = 60, so it sends less.
TEST(GroupCostMeasureTest, MeasuresGroupsOfTheModelsTensorsWithTheirLayout) {
  GroupCostOptions options;
  options.tensor_elements.assign(40, 150);
  options.sizes = {1024, 3000, 6000};
  options.repeats = 1;
  std::vector<double> sent;
  for (const char* spec : {"topk:ratio=0.01,ef=off,select=tensor",
                           "topk:ratio=0.01,ef=off,select=group"}) {
    options.codec = CodecSpec::parse(spec);
    run_world(2, [&](Communicator& comm) {
      const auto m = measure_group_costs(comm, options);
      ASSERT_EQ(m.samples.size(), 3u);
      EXPECT_EQ(m.samples[0].elements, 1050u);  // 7 tensors
      EXPECT_EQ(m.samples[1].elements, 3000u);  // 20 tensors
      EXPECT_EQ(m.samples[2].elements, 6000u);  // all 40
      if (comm.rank() == 0) sent.push_back(m.samples[2].sent_bytes);
    });
  }
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_GT(sent[0], sent[1]) << "select=tensor should send 80 pairs, select=group 60";
  // One tensor makes one group: the sizes are measured without a layout.
  options.tensor_elements = {5000};
  run_world(1, [&](Communicator& comm) {
    const auto m = measure_group_costs(comm, options);
    ASSERT_EQ(m.samples.size(), 3u);
    EXPECT_EQ(m.samples[1].elements, 3000u);
  });
}

TEST(GroupCostMeasureTest, DefaultSizesAreGeometric) {
  GroupCostOptions options;
  options.largest = 4096;
  options.repeats = 1;
  run_world(1, [&](Communicator& comm) {
    const auto m = measure_group_costs(comm, options);
    // 1024·4^(i/7), rounded: 1024, 1248, 1522, 1855, 2261, 2756, 3360, 4096.
    ASSERT_EQ(m.samples.size(), 8u);
    EXPECT_EQ(m.samples[0].elements, 1024u);
    EXPECT_EQ(m.samples[1].elements, 1248u);
    EXPECT_EQ(m.samples[7].elements, 4096u);
    options.largest = 2047;  // no room for two sizes from 1 Ki
    EXPECT_THROW(measure_group_costs(comm, options), InvalidArgument);
  });
}

TEST(GroupCostMeasureTest, RefusesBadOptionsOnEveryRank) {
  GroupCostOptions options;
  options.sizes = {1024, 4096};
  // An unknown codec is refused where its spec is parsed, naming it.
  try {
    options.codec = CodecSpec::parse("no-such-codec");
    ADD_FAILURE() << "an unknown codec was parsed";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("no-such-codec"));
  }
  options.codec = CodecSpec::parse("fp32");
  options.repeats = 0;
  expect_throw_on_every_rank<InvalidArgument>(
      2, [&](Communicator& comm) { measure_group_costs(comm, options); });
  options.repeats = 1;
  options.sizes = {1024, 0};
  expect_throw_on_every_rank<InvalidArgument>(
      2, [&](Communicator& comm) { measure_group_costs(comm, options); });
}

}  // namespace
}  // namespace qccl::test
