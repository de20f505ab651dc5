#include "qccl/collectives/layout.h"

#include <algorithm>

#include "qccl/collectives/encoding.h"
#include "qccl/common/errors.h"

namespace qccl {

std::vector<std::size_t> range_counts(std::span<const Range> ranges, std::size_t scale) {
  std::vector<std::size_t> counts;
  for (const Range& r : ranges) counts.push_back(r.count * scale);
  return counts;
}

std::vector<Range> ranges_from_counts(std::span<const std::size_t> counts) {
  std::vector<Range> ranges;
  std::size_t first = 0;
  for (std::size_t c : counts) {
    ranges.push_back({first, c});
    first += c;
  }
  return ranges;
}

std::vector<Range> split_range(Range whole, std::size_t parts, std::size_t granularity) {
  if (parts == 0 || granularity == 0) {
    throw InvalidArgument("split_range needs parts >= 1 and granularity >= 1");
  }
  const std::size_t units = (whole.count + granularity - 1) / granularity;
  const std::size_t base = units / parts;
  const std::size_t extra = units % parts;
  std::vector<Range> ranges(parts);
  std::size_t first = whole.first;
  for (std::size_t p = 0; p < parts; ++p) {
    const std::size_t unit_count = base + (p < extra ? 1 : 0);
    const std::size_t end = std::min(whole.end(), first + unit_count * granularity);
    ranges[p] = {first, end - first};
    first = end;
  }
  return ranges;
}

SlotLayout::SlotLayout(std::span<const Range> segments, std::size_t chunks_per_segment,
                       std::size_t granularity, const Encoding& encoding)
    : segments_(segments.size()), chunks_(std::max<std::size_t>(1, chunks_per_segment)) {
  const bool identity = encoding.identity_layout();
  exact_ = identity;
  slots_.reserve(segments_ * chunks_);
  std::size_t offset = 0;
  for (const Range& segment : segments) {
    for (const Range& chunk : split_range(segment, chunks_, granularity)) {
      Slot s;
      s.elements = chunk;
      s.capacity = encoding.max_encoded_bytes(chunk.count);
      if (identity) {
        if (s.capacity != chunk.count * sizeof(float)) {
          throw InvalidArgument("encoding '" + encoding.name() +
                                "' claims identity layout but its chunk of " +
                                std::to_string(chunk.count) + " elements takes " +
                                std::to_string(s.capacity) + " bytes");
        }
        s.offset = chunk.first * sizeof(float);
      } else {
        s.offset = offset;
        offset += s.capacity;
      }
      max_capacity_ = std::max(max_capacity_, s.capacity);
      slots_.push_back(s);
    }
  }
  total_bytes_ = identity ? (segments.empty() ? 0 : segments.back().end() * sizeof(float)) : offset;
}

SlotLayout::SlotLayout(std::span<const std::size_t> segment_bytes, std::size_t chunks_per_segment)
    : segments_(segment_bytes.size()), chunks_(std::max<std::size_t>(1, chunks_per_segment)) {
  exact_ = true;
  std::size_t offset = 0;
  for (std::size_t bytes : segment_bytes) {
    for (const Range& chunk : split_range({offset, bytes}, chunks_, 1)) {
      Slot s;
      s.elements = chunk;
      s.offset = chunk.first;
      s.capacity = chunk.count;
      s.size = chunk.count;
      max_capacity_ = std::max(max_capacity_, s.capacity);
      slots_.push_back(s);
    }
    offset += bytes;
  }
  total_bytes_ = offset;
}

// Chunks per segment: enough that no chunk exceeds `chunk_bytes`, and at
// least kPipelineDepth when the segment is big enough that each chunk still
// carries kMinChunkBytes; so mid-sized messages pipeline too, and small ones
// are not cut into latency-bound pieces.
std::size_t chunks_for(std::span<const Range> segments, std::size_t chunk_bytes) {
  constexpr std::size_t kPipelineDepth = 4;
  constexpr std::size_t kMinChunkBytes = std::size_t{64} << 10;
  std::size_t largest = 0;
  for (const Range& s : segments) largest = std::max(largest, s.count);
  const std::size_t bytes = largest * sizeof(float);
  const std::size_t cap = std::max<std::size_t>(1, chunk_bytes);
  const std::size_t by_cap = (bytes + cap - 1) / cap;
  const std::size_t by_depth = std::min(kPipelineDepth, bytes / kMinChunkBytes);
  return std::max<std::size_t>({1, by_cap, by_depth});
}
}  // namespace qccl
