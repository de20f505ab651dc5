// Which gradient tensors are reduced together as one vector (a bucket), for
// data-parallel training. The policy is pluggable: the size-capped rule of
// PyTorch DDP, one bucket per tensor (layer-wise compression), one bucket for
// the whole model, or groups given by their sizes (MergeComp's searched
// partition, merge_plan.h, or a partition written by hand).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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

// The tensor counts of contiguous groups, in reverse registration order (the
// order backward produces gradients): {3, 5} on 8 tensors puts tensors
// 7, 6, 5 in bucket 0 and 4 .. 0 in bucket 1. MergeComp §4.1 merges
// tensors into such groups.
using GroupSizes = std::vector<std::size_t>;

// Every bucket one tensor, the last registered first: layer-wise
// compression, as frameworks apply codecs by default (MergeComp §2.2).
class LayerwisePolicy final : public BucketPolicy {
 public:
  std::string name() const override { return "layerwise"; }
  BucketPlan plan(std::span<const std::size_t> tensor_elements) const override;
};

// The whole model in one bucket, reduced after backward (MergeComp's y = 1).
class SingleBucketPolicy final : public BucketPolicy {
 public:
  std::string name() const override { return "one"; }
  BucketPlan plan(std::span<const std::size_t> tensor_elements) const override;
};

// Contiguous groups of the given sizes. plan() throws InvalidArgument when
// they do not add up to the model's tensor count, naming both.
class GroupsPolicy final : public BucketPolicy {
 public:
  // Throws InvalidArgument for no group or an empty one.
  explicit GroupsPolicy(GroupSizes sizes);
  std::string name() const override;  // "groups:3,5"
  BucketPlan plan(std::span<const std::size_t> tensor_elements) const override;
  const GroupSizes& sizes() const { return sizes_; }

 private:
  GroupSizes sizes_;
};

// The plan of contiguous groups of `sizes` over tensors of the given counts.
BucketPlan plan_of_groups(const GroupSizes& sizes, std::span<const std::size_t> tensor_elements);
// A plan's group sizes if its buckets are contiguous groups in reverse
// registration order (every policy above makes such plans); empty if not.
GroupSizes group_sizes_of(const BucketPlan& plan);
// "3,5": sizes as `groups:` takes them; parse_group_sizes reads them back,
// throwing InvalidArgument naming the bad entry.
std::string format_group_sizes(const GroupSizes& sizes);
GroupSizes parse_group_sizes(std::string_view text);

}  // namespace qccl
QCCL_API_END
