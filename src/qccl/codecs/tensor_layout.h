// Which tensors make up the vector a codec instance compresses: their names,
// shapes and places. Codecs keep per-tensor state under the tensor's name
// (tensor_state.h), take one scale per tensor (IntSGD Algorithm 2's blocks),
// and read matrix shapes (PowerSGD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct TensorSlice {
  std::string name;                  // e.g. "fc1.weight": the key of its state
  std::vector<std::int64_t> shape;   // e.g. {256, 784}; {} for a scalar
  std::size_t offset = 0;            // first element within the vector
  std::size_t elements = 0;          // the product of shape
};

class TensorLayout {
 public:
  // No tensors given: the vector is one unnamed tensor of whatever length a
  // call passes.
  TensorLayout() = default;
  // Consecutive tensors from element 0, each named (uniquely, non-empty) and
  // with elements equal to the product of its shape. Throws InvalidArgument.
  explicit TensorLayout(std::vector<TensorSlice> tensors);
  // Consecutive tensors of these sizes, named "block0", "block1", ... (for
  // callers without names, such as tools and tests).
  static TensorLayout of_sizes(std::span<const std::size_t> sizes);
  // Consecutive tensors with these names and shapes.
  static TensorLayout of_shapes(std::span<const std::string> names,
                                std::span<const std::vector<std::int64_t>> shapes);

  bool unnamed() const { return tensors_.empty(); }
  // The tensors of a vector of `length` elements (one unnamed tensor if none
  // were given).
  std::vector<TensorSlice> tensors(std::size_t length) const;
  std::size_t tensor_count() const { return unnamed() ? 1 : tensors_.size(); }
  std::size_t total() const { return total_; }
  // Throws InvalidArgument naming `what` unless the layout covers exactly
  // `length` elements.
  void check(std::size_t length, std::string_view what) const;
  // A hash of names and shapes: ranks whose models differ get different values.
  std::uint64_t fingerprint() const;

 private:
  std::vector<TensorSlice> tensors_;
  std::size_t total_ = 0;
};

}  // namespace qccl
QCCL_API_END
