// Which gradient tensors are reduced together as one vector (a bucket), for
// data-parallel training. The policy is pluggable: the size-capped rule of
// PyTorch DDP below now, MergeComp's searched partition later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct BucketPlan {
  struct Place {
    std::size_t bucket = 0;
    std::size_t offset = 0;  // first element of the tensor within its bucket
  };
  std::vector<std::vector<std::size_t>> buckets;  // tensor indices, in layout order
  std::vector<std::size_t> bucket_elements;       // elements per bucket
  std::vector<Place> places;                      // per tensor index

  std::size_t bucket_count() const { return buckets.size(); }
  // A hash of the whole layout: ranks whose models differ get different
  // values, which a training engine compares before the first step.
  std::uint64_t fingerprint() const;
};

class BucketPolicy {
 public:
  virtual ~BucketPolicy() = default;
  virtual std::string name() const = 0;
  // The plan for tensors of the given element counts, in registration order.
  // Must depend on nothing else, so every rank computes the same plan.
  virtual BucketPlan plan(std::span<const std::size_t> tensor_elements) const = 0;
};

// PyTorch DDP's rule: tensors in reverse registration order (backward
// produces the last layers' gradients first), packed greedily into buckets
// of at most `cap_bytes`, the first one at most `first_cap_bytes` so that
// communication starts early. A tensor larger than the cap gets a bucket of
// its own; tensors are never split.
class SizeCappedPolicy final : public BucketPolicy {
 public:
  explicit SizeCappedPolicy(std::size_t cap_bytes = std::size_t{25} << 20,
                            std::size_t first_cap_bytes = std::size_t{1} << 20,
                            std::size_t element_bytes = sizeof(float));
  std::string name() const override;
  BucketPlan plan(std::span<const std::size_t> tensor_elements) const override;

 private:
  std::size_t cap_bytes_, first_cap_bytes_, element_bytes_;
};

}  // namespace qccl
QCCL_API_END
