// Tensor layouts the PowerSGD tests share.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "qccl/codecs/tensor_layout.h"

namespace qccl::test {

inline TensorLayout layout_of(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& ts) {
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
inline TensorLayout mixed_layout() {
  return layout_of({{"conv.weight", {16, 4, 3, 3}},
                    {"conv.bias", {16}},
                    {"fc1.weight", {60, 50}},
                    {"fc1.bias", {60}},
                    {"tiny.weight", {3, 4}},
                    {"empty.weight", {0, 7}},
                    {"fc2.weight", {10, 60}},
                    {"scale", {}}});
}

}  // namespace qccl::test
