// Raw bytes (a codec's saved state) as uint8 tensors in a libtorch archive,
// and back.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

namespace qccl::engines {

inline torch::Tensor bytes_tensor(const std::vector<std::byte>& bytes) {
  auto t = torch::empty({static_cast<std::int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
  return t;
}

inline std::span<const std::byte> bytes_of(const torch::Tensor& t) {
  const auto* data = reinterpret_cast<const std::byte*>(t.data_ptr<std::uint8_t>());
  return std::span(data, static_cast<std::size_t>(t.numel()));
}

}  // namespace qccl::engines
