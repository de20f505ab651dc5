#include "qccl/data/click_data.h"

#include <cmath>
#include <string>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::data {
namespace {

constexpr double kBias = -0.5;
constexpr double kWeightScale = 1.2;

}  // namespace

ClickData::ClickData(ClickDataShape shape, std::uint64_t seed) : shape_(shape), seed_(seed) {
  if (shape.fields == 0 || shape.values_per_field < 2 || shape.train_samples == 0 ||
      shape.test_samples == 0) {
    throw InvalidArgument("click data: fields, samples and values per field (>= 2) must be "
                          "positive");
  }
}

std::uint64_t ClickData::sample_key(std::size_t i, bool test) const {
  return test ? shape_.train_samples + i : i;
}

void ClickData::features(std::size_t i, bool test, std::span<std::int64_t> out) const {
  if (i >= (test ? shape_.test_samples : shape_.train_samples) || out.size() != shape_.fields) {
    throw InvalidArgument("click data: sample " + std::to_string(i) + " or " +
                          std::to_string(out.size()) + " fields out of range");
  }
  const CounterRng rng(seed_, sample_key(i, test), 0, 0, RngStream::data);
  for (std::size_t f = 0; f < shape_.fields; ++f) {
    const double u = rng.uniform(f);
    out[f] = static_cast<std::int64_t>(static_cast<double>(shape_.values_per_field) * u * u * u);
  }
}

double ClickData::click_probability(std::span<const std::int64_t> features) const {
  double logit = kBias;
  for (std::size_t f = 0; f < features.size(); ++f) {
    const CounterRng weights(seed_, ~std::uint64_t{0}, f, 1, RngStream::data);
    logit += kWeightScale * (2.0 * weights.uniform(static_cast<std::uint64_t>(features[f])) - 1.0);
  }
  return 1.0 / (1.0 + std::exp(-logit));
}

float ClickData::label(std::size_t i, bool test) const {
  std::int64_t values[64];
  if (shape_.fields > 64) throw InvalidArgument("click data: at most 64 fields");
  const std::span<std::int64_t> view(values, shape_.fields);
  features(i, test, view);
  const CounterRng rng(seed_, sample_key(i, test), 1, 0, RngStream::data);
  return rng.uniform(0) < click_probability(view) ? 1.0f : 0.0f;
}

}  // namespace qccl::data
