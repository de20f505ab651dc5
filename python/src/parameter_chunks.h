// A half-precision gradient bucket cut into chunks of whole parameters, so
// that the DDP hook averages it one chunk at a time through an fp32 buffer
// of one chunk's size (bucket_hook.h) instead of an fp32 copy of the bucket.
#pragma once

#include <cstddef>
#include <vector>

namespace qccl::python {

struct ParameterChunk {
  std::size_t first = 0;    // the chunk's first element in the bucket
  std::size_t count = 0;    // its elements
  std::size_t begin = 0;    // its parameters: positions [begin, end) in the bucket
  std::size_t end = 0;
};

// Consecutive parameters (their element counts, in bucket order) grouped
// while a chunk stays within `chunk_elements`; a parameter larger than that
// is a chunk of its own. Every parameter is in exactly one chunk, in order.
// `chunk_elements` must be positive.
std::vector<ParameterChunk> parameter_chunks(const std::vector<std::size_t>& elements,
                                             std::size_t chunk_elements);

}  // namespace qccl::python
