#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "qccl/common/counter_rng.h"

namespace qccl {
namespace {

TEST(CounterRngTest, IsAPureFunctionOfItsCoordinates) {
  const CounterRng a(7, 3, 2, 1, RngStream::quantize), b(7, 3, 2, 1, RngStream::quantize);
  for (std::uint64_t i = 0; i < 100; ++i) EXPECT_EQ(a.bits(i), b.bits(i));
  // Changing any coordinate changes the key.
  const CounterRng others[] = {{8, 3, 2, 1, RngStream::quantize}, {7, 4, 2, 1, RngStream::quantize},
                               {7, 3, 3, 1, RngStream::quantize}, {7, 3, 2, 2, RngStream::quantize},
                               {7, 3, 2, 1, RngStream::reduce}};
  for (const auto& o : others) EXPECT_NE(o.key(), a.key());
}

// Mean and 16-bin histogram of 2^20 uniforms: each within 5 standard
// deviations of its expectation (mean: sd = sqrt(1/12/N); bin count:
// sd = sqrt(N p (1-p)) with p = 1/16).
TEST(CounterRngTest, UniformsAreUniform) {
  constexpr std::size_t kN = 1 << 20;
  const CounterRng rng(42, 0, 0, 0, RngStream::quantize);
  double sum = 0;
  std::array<std::size_t, 16> bins{};
  for (std::size_t i = 0; i < kN; ++i) {
    const float u = rng.uniform(i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    ++bins[static_cast<std::size_t>(u * 16)];
  }
  EXPECT_NEAR(sum / kN, 0.5, 5 * std::sqrt(1.0 / 12 / kN));
  const double expected = kN / 16.0, sd = std::sqrt(kN * (1.0 / 16) * (15.0 / 16));
  for (std::size_t b : bins) EXPECT_NEAR(static_cast<double>(b), expected, 5 * sd);
}

// Neighbouring counters are uncorrelated: the lag-1 correlation of 2^20
// uniforms is within 5/sqrt(N) of zero.
TEST(CounterRngTest, NeighbouringCountersAreUncorrelated) {
  constexpr std::size_t kN = 1 << 20;
  const CounterRng rng(1, 2, 3, 4, RngStream::quantize);
  double product = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    product += (rng.uniform(i) - 0.5) * (rng.uniform(i + 1) - 0.5);
  }
  EXPECT_NEAR(product / kN / (1.0 / 12), 0.0, 5 / std::sqrt(static_cast<double>(kN)));
}

}  // namespace
}  // namespace qccl
