#include "qccl/scheduling/bucket_plan.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "qccl/common/counter_rng.h"  // mix64
#include "qccl/common/errors.h"

namespace qccl {

std::uint64_t BucketPlan::fingerprint() const {
  std::uint64_t hash = mix64(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    hash = mix64(hash ^ bucket_elements[b]);
    for (std::size_t tensor : buckets[b]) hash = mix64(hash ^ (tensor + 0x9E3779B97F4A7C15ULL));
  }
  return hash;
}

SizeCappedPolicy::SizeCappedPolicy(std::size_t cap_bytes, std::size_t first_cap_bytes,
                                   std::size_t element_bytes)
    : cap_bytes_(cap_bytes), first_cap_bytes_(first_cap_bytes), element_bytes_(element_bytes) {
  if (element_bytes == 0 || cap_bytes < element_bytes || first_cap_bytes < element_bytes) {
    throw InvalidArgument("bucket caps must hold at least one element (got cap " +
                          std::to_string(cap_bytes) + " B, first cap " +
                          std::to_string(first_cap_bytes) + " B)");
  }
}

std::string SizeCappedPolicy::name() const {
  return "size-capped:cap=" + std::to_string(cap_bytes_) +
         ",first=" + std::to_string(first_cap_bytes_);
}

BucketPlan SizeCappedPolicy::plan(std::span<const std::size_t> tensor_elements) const {
  BucketPlan plan;
  plan.places.resize(tensor_elements.size());
  std::size_t used = 0;  // bytes in the open bucket
  for (std::size_t k = tensor_elements.size(); k-- > 0;) {
    const std::size_t bytes = tensor_elements[k] * element_bytes_;
    // The open bucket is the last one; the first bucket has the smaller cap.
    const std::size_t cap = plan.buckets.size() == 1 ? first_cap_bytes_ : cap_bytes_;
    if (plan.buckets.empty() || (used > 0 && used + bytes > cap)) {
      plan.buckets.emplace_back();
      plan.bucket_elements.push_back(0);
      used = 0;
    }
    const std::size_t b = plan.buckets.size() - 1;
    plan.places[k] = {b, plan.bucket_elements[b]};
    plan.buckets[b].push_back(k);
    plan.bucket_elements[b] += tensor_elements[k];
    used += bytes;
  }
  return plan;
}

BucketPlan plan_of_groups(const GroupSizes& sizes, std::span<const std::size_t> tensor_elements) {
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  if (total != tensor_elements.size()) {
    throw InvalidArgument("bucket groups of " + format_group_sizes(sizes) + " tensors make " +
                          std::to_string(total) + " tensors, but the model has " +
                          std::to_string(tensor_elements.size()));
  }
  BucketPlan plan;
  plan.places.resize(tensor_elements.size());
  std::size_t k = tensor_elements.size();  // tensors taken from the end
  for (const std::size_t size : sizes) {
    const std::size_t b = plan.buckets.size();
    plan.buckets.emplace_back();
    plan.bucket_elements.push_back(0);
    for (std::size_t i = 0; i < size; ++i) {
      --k;
      plan.places[k] = {b, plan.bucket_elements[b]};
      plan.buckets[b].push_back(k);
      plan.bucket_elements[b] += tensor_elements[k];
    }
  }
  return plan;
}

GroupSizes group_sizes_of(const BucketPlan& plan) {
  GroupSizes sizes;
  std::size_t expected = plan.places.size();  // the next tensor, counting down
  for (const auto& bucket : plan.buckets) {
    for (const std::size_t t : bucket) {
      if (expected == 0 || t != expected - 1) return {};
      --expected;
    }
    sizes.push_back(bucket.size());
  }
  return expected == 0 ? sizes : GroupSizes{};
}

std::string format_group_sizes(const GroupSizes& sizes) {
  std::string text;
  for (const std::size_t size : sizes) text += (text.empty() ? "" : ",") + std::to_string(size);
  return text;
}

GroupSizes parse_group_sizes(std::string_view text) {
  GroupSizes sizes;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view entry = text.substr(at, comma - at);
    std::size_t value = 0;
    const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), value);
    if (entry.empty() || error != std::errc() || end != entry.data() + entry.size() || value == 0) {
      throw InvalidArgument("bucket groups '" + std::string(text) + "': '" + std::string(entry) +
                            "' is not a tensor count; give positive counts separated by commas, "
                            "e.g. groups:3,40");
    }
    sizes.push_back(value);
    at = comma + 1;
  }
  return sizes;
}

BucketPlan LayerwisePolicy::plan(std::span<const std::size_t> tensor_elements) const {
  return plan_of_groups(GroupSizes(tensor_elements.size(), 1), tensor_elements);
}

BucketPlan SingleBucketPolicy::plan(std::span<const std::size_t> tensor_elements) const {
  if (tensor_elements.empty()) return {};
  return plan_of_groups({tensor_elements.size()}, tensor_elements);
}

GroupsPolicy::GroupsPolicy(GroupSizes sizes) : sizes_(std::move(sizes)) {
  if (sizes_.empty() || std::find(sizes_.begin(), sizes_.end(), 0) != sizes_.end()) {
    throw InvalidArgument("bucket groups '" + format_group_sizes(sizes_) +
                          "': every group needs at least one tensor");
  }
}

std::string GroupsPolicy::name() const { return "groups:" + format_group_sizes(sizes_); }

BucketPlan GroupsPolicy::plan(std::span<const std::size_t> tensor_elements) const {
  return plan_of_groups(sizes_, tensor_elements);
}

}  // namespace qccl
