#include "parameter_chunks.h"

#include "qccl/common/errors.h"

namespace qccl::python {

std::vector<ParameterChunk> parameter_chunks(const std::vector<std::size_t>& elements,
                                             std::size_t chunk_elements) {
  if (chunk_elements == 0) {
    throw InvalidArgument("the half-precision chunk must hold at least one element "
                          "(state.half_chunk > 0)");
  }
  std::vector<ParameterChunk> chunks;
  ParameterChunk current;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (current.end > current.begin && current.count + elements[i] > chunk_elements) {
      chunks.push_back(current);
      current = {current.first + current.count, 0, i, i};
    }
    current.count += elements[i];
    current.end = i + 1;
  }
  if (current.end > current.begin) chunks.push_back(current);
  return chunks;
}

}  // namespace qccl::python
