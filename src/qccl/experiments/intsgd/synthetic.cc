#include "qccl/experiments/intsgd/synthetic.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::convex {
namespace {

// Standard normal draw number `counter` of `rng` (Box-Muller on two uniforms).
double gaussian(const CounterRng& rng, std::uint64_t counter) {
  const double u1 = (static_cast<double>(rng.bits64(2 * counter) >> 11) + 0.5) * 0x1p-53;
  const double u2 = static_cast<double>(rng.bits64(2 * counter + 1) >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace

Dataset make_synthetic(std::size_t rows, std::size_t features, std::uint64_t seed) {
  if (rows < 2 || features < 1) {
    throw InvalidArgument("synthetic data needs at least 2 rows and 1 feature");
  }
  const CounterRng truth(seed, 0, 0, 0, RngStream::shared), draws(seed, 1, 0, 0, RngStream::shared);
  std::vector<double> x_true(features);
  for (std::size_t j = 0; j < features; ++j) {
    x_true[j] = gaussian(truth, j) / std::sqrt(static_cast<double>(features));
  }
  Dataset data;
  std::vector<SparseEntry> entries(features);
  std::vector<double> raw(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const double position = static_cast<double>(r) / static_cast<double>(rows);
    double margin = 0;
    for (std::size_t j = 0; j < features; ++j) {
      const double drift = std::sin(std::numbers::pi * position * static_cast<double>(j % 7 + 1));
      const double value = drift + gaussian(draws, r * (features + 1) + j);
      entries[j] = {static_cast<std::uint32_t>(j), value};
      margin += value * x_true[j];
    }
    margin += 0.5 * gaussian(draws, r * (features + 1) + features);
    data.add_row(entries, margin >= 0 ? 1.0 : -1.0);
  }
  data.set_features(features);
  normalize(data, Normalization::unit_rows);
  return data;
}

}  // namespace qccl::convex
