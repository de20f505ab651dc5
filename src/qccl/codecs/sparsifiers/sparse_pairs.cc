#include "qccl/codecs/sparsifiers/sparse_pairs.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "qccl/common/errors.h"

namespace qccl {

SparsePairsEncoding::SparsePairsEncoding(std::string name, std::vector<std::size_t> selected,
                                           std::size_t max_pairs)
    : name_(std::move(name)), selected_(std::move(selected)), max_pairs_(max_pairs) {}

std::size_t SparsePairsEncoding::max_encoded_bytes(std::size_t count) const {
  return sparse_pairs_bytes(std::min(count, max_pairs_));
}

std::size_t SparsePairsEncoding::encode(std::span<const float> in, std::size_t first,
                                         std::span<std::byte> out) {
  if (in.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument(name_ + ": a chunk of " + std::to_string(in.size()) +
                          " elements cannot be indexed by 32 bits; use smaller chunks");
  }
  const auto begin = std::lower_bound(selected_.begin(), selected_.end(), first);
  const auto end = std::lower_bound(begin, selected_.end(), first + in.size());
  const auto pairs = static_cast<std::size_t>(end - begin);
  const std::size_t bytes = sparse_pairs_bytes(pairs);
  if (bytes > out.size()) {
    throw InvalidArgument(name_ + ": " + std::to_string(pairs) + " pairs need " +
                          std::to_string(bytes) + " bytes but the chunk has room for " +
                          std::to_string(out.size()));
  }
  const auto count = static_cast<std::uint32_t>(pairs);
  std::memcpy(out.data(), &count, 4);
  std::byte* indices = out.data() + 4;
  std::byte* values = indices + 4 * pairs;
  for (std::size_t p = 0; p < pairs; ++p) {
    const std::size_t j = begin[static_cast<std::ptrdiff_t>(p)] - first;
    const auto index = static_cast<std::uint32_t>(j);
    std::memcpy(indices + 4 * p, &index, 4);
    std::memcpy(values + 4 * p, &in[j], 4);
  }
  return bytes;
}

void SparsePairsEncoding::decode(std::span<const std::byte> in, std::size_t first,
                                  std::span<float> out) {
  const auto corrupt = [&](const std::string& why) {
    return CommError(name_ + ": the chunk of elements [" + std::to_string(first) + ", " +
                     std::to_string(first + out.size()) + ") " + why +
                     " (corrupt or truncated message?)");
  };
  if (in.size() < 4) {
    throw corrupt("has " + std::to_string(in.size()) + " bytes, less than its 4-byte pair count");
  }
  std::uint32_t count = 0;
  std::memcpy(&count, in.data(), 4);
  const std::size_t pairs = count;
  if (pairs > out.size()) {
    throw corrupt("claims " + std::to_string(pairs) + " pairs for " +
                  std::to_string(out.size()) + " elements");
  }
  if (in.size() != sparse_pairs_bytes(pairs)) {
    throw corrupt("has " + std::to_string(in.size()) + " bytes, but " + std::to_string(pairs) +
                  " pairs take " + std::to_string(sparse_pairs_bytes(pairs)));
  }
  std::fill(out.begin(), out.end(), 0.0f);
  const std::byte* indices = in.data() + 4;
  const std::byte* values = indices + 4 * pairs;
  std::size_t next = 0;  // the least index the next pair may have
  for (std::size_t p = 0; p < pairs; ++p) {
    std::uint32_t index = 0;
    std::memcpy(&index, indices + 4 * p, 4);
    if (index < next || index >= out.size()) {
      throw corrupt("has pair " + std::to_string(p) + " at index " + std::to_string(index) +
                    ", out of range or not increasing");
    }
    std::memcpy(&out[index], values + 4 * p, 4);
    next = std::size_t{index} + 1;
  }
}


}  // namespace qccl
