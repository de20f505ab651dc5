// Per-tensor state of codecs — error-feedback residuals, IntDIANA's shifts,
// IntSGD's moving averages — keyed by (tensor name, field), not by bucket.
// The codec instances of every bucket of a model share one store, so the
// state follows each parameter when the bucket layout changes (a scheduler
// re-plans; PyTorch rebuilds its buckets after the first step), and a
// checkpoint saves it once, by name. The store is this rank's: residuals and
// local shifts differ between ranks.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class TensorStateStore {
 public:
  // The fp64 (resp. fp32) buffer `field` of tensor `tensor`, created
  // zero-filled with `count` values the first time it is asked for. Throws
  // InvalidArgument if it exists with another count (a tensor changed size).
  std::span<double> doubles(std::string_view tensor, std::string_view field, std::size_t count);
  std::span<float> floats(std::string_view tensor, std::string_view field, std::size_t count);
  bool contains(std::string_view tensor, std::string_view field) const;
  std::size_t size() const { return doubles_.size() + floats_.size(); }
  void clear();

  // Every buffer, for checkpoints; load() replaces the store's contents and
  // throws InvalidArgument for bytes that are not a whole saved store.
  std::vector<std::byte> save() const;
  void load(std::span<const std::byte> bytes);

 private:
  using Key = std::pair<std::string, std::string>;
  std::map<Key, std::vector<double>, std::less<>> doubles_;
  std::map<Key, std::vector<float>, std::less<>> floats_;
};

}  // namespace qccl
QCCL_API_END
