// Reference values of the sign codecs' levels, for their tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace qccl::test {

// The values a tensor's elements decode to: ||p||_1/d * sign(p), or the two
// means, in fp64 in element order as the codecs compute them.
inline std::vector<float> scaled_sign(std::span<const float> p) {
  double sum = 0;
  for (float v : p) sum += std::abs(static_cast<double>(v));
  const auto s = static_cast<float>(sum / static_cast<double>(p.size()));
  std::vector<float> q(p.size());
  for (std::size_t j = 0; j < p.size(); ++j) q[j] = p[j] >= 0.0f ? s : -s;
  return q;
}

inline std::vector<float> two_means(std::span<const float> p) {
  double positive = 0, negative = 0;
  std::size_t positives = 0;
  for (float v : p) {
    if (v >= 0.0f) {
      positive += v;
      ++positives;
    } else {
      negative += v;
    }
  }
  const std::size_t negatives = p.size() - positives;
  const float up = positives ? static_cast<float>(positive / static_cast<double>(positives)) : 0.0f;
  const float down = negatives ? static_cast<float>(negative / static_cast<double>(negatives)) : 0.0f;
  std::vector<float> q(p.size());
  for (std::size_t j = 0; j < p.size(); ++j) q[j] = p[j] >= 0.0f ? up : down;
  return q;
}

}  // namespace qccl::test
