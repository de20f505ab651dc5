#include "qccl/scheduling/bucket_plan.h"

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

}  // namespace qccl
