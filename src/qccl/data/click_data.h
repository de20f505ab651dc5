// Generated click-through data for the communication-heavy recommendation
// model (large embedding tables and a small MLP, standing in for DeepLight
// on Criteo in Global-QSGD §9, Table 3): each sample has `fields` categorical features and a 0/1
// click label. Nothing is stored: sample i is a pure function of (seed, i),
// so every rank reads its shard of a dataset of any size without memory.
//
// Feature values are skewed toward small ids (value = ⌊V·u³⌋), as real
// categorical data is; the click probability is σ(b + Σ_f w_f[value_f])
// with hidden per-value weights, so a model can learn it and the achievable
// accuracy is well above the base rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace qccl::data {

struct ClickDataShape {
  std::size_t fields = 8;
  std::size_t values_per_field = 100000;
  std::size_t train_samples = 200000;
  std::size_t test_samples = 20000;
};

class ClickData {
 public:
  ClickData(ClickDataShape shape, std::uint64_t seed);
  const ClickDataShape& shape() const { return shape_; }
  // Sample i of the training set (i < train_samples) or, with `test`, of
  // the test set. Writes `fields` values in [0, values_per_field).
  void features(std::size_t i, bool test, std::span<std::int64_t> out) const;
  float label(std::size_t i, bool test) const;
  // The probability of a click the generator used, for tests.
  double click_probability(std::span<const std::int64_t> features) const;

 private:
  std::uint64_t sample_key(std::size_t i, bool test) const;

  ClickDataShape shape_;
  std::uint64_t seed_;
};

}  // namespace qccl::data
