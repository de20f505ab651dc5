// How a vector is cut into the pieces collectives move: segments (one per
// ring position or halving-doubling block) split into pipeline chunks, each
// chunk a "slot" with a fixed place and capacity in a byte work buffer.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Encoding;

struct Range {
  std::size_t first = 0;
  std::size_t count = 0;
  std::size_t end() const { return first + count; }
};

// The counts of `ranges`, each times `scale` (e.g. bytes per element).
std::vector<std::size_t> range_counts(std::span<const Range> ranges, std::size_t scale = 1);
// Consecutive ranges of these counts from element 0 (an allgather's shards
// in its output, reduce-scatter blocks given by counts).
std::vector<Range> ranges_from_counts(std::span<const std::size_t> counts);

// Splits `whole` into `parts` contiguous ranges, as equal as `granularity`
// allows: every boundary is a multiple of `granularity` elements from
// whole.first, so only the last non-empty range can hold a partial unit.
// Ranges may be empty (more parts than units).
std::vector<Range> split_range(Range whole, std::size_t parts, std::size_t granularity);

struct Slot {
  Range elements;            // elements of the vector this slot carries
  std::size_t offset = 0;    // byte offset in the work buffer
  std::size_t capacity = 0;  // bytes reserved
  std::size_t size = 0;      // bytes currently held
};

class SlotLayout {
 public:
  // Segments split into chunks_per_segment chunks each; a slot's capacity is
  // encoding.max_encoded_bytes(count). With identity layout (fp32 sum) the
  // byte offset of element i is 4*i, so the work buffer is the fp32 vector.
  SlotLayout(std::span<const Range> segments, std::size_t chunks_per_segment,
             std::size_t granularity, const Encoding& encoding);
  // Raw bytes: segment s is `segment_bytes[s]` bytes, stored back to back.
  SlotLayout(std::span<const std::size_t> segment_bytes, std::size_t chunks_per_segment);

  std::size_t segments() const { return segments_; }
  std::size_t chunks_per_segment() const { return chunks_; }
  Slot& slot(std::size_t segment, std::size_t chunk) { return slots_[segment * chunks_ + chunk]; }
  Slot& slot(std::size_t index) { return slots_[index]; }
  const Slot& slot(std::size_t index) const { return slots_[index]; }
  std::size_t slot_count() const { return slots_.size(); }
  std::size_t total_bytes() const { return total_bytes_; }
  std::size_t max_slot_capacity() const { return max_capacity_; }
  // True when every slot must arrive with exactly `capacity` bytes (raw
  // bytes and identity layouts), so a short message is caught as corrupt.
  bool exact_sizes() const { return exact_; }

 private:
  std::size_t segments_ = 0;
  std::size_t chunks_ = 1;
  std::vector<Slot> slots_;
  std::size_t total_bytes_ = 0;
  std::size_t max_capacity_ = 0;
  bool exact_ = false;
};

// Pipeline chunks per segment: a chunk of the largest segment carries at most
// `chunk_bytes` of fp32 input, and segments of 4 x 64 KiB or more are cut into
// at least 4 chunks so that mid-sized messages pipeline as well.
std::size_t chunks_for(std::span<const Range> segments, std::size_t chunk_bytes);

}  // namespace qccl
QCCL_API_END
