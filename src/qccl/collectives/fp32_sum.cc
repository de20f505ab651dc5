#include "qccl/collectives/fp32_sum.h"

#include <cstring>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

void check_bytes(std::size_t got, std::size_t count, std::string_view what) {
  if (got != count * sizeof(float)) {
    throw CommError("fp32-sum " + std::string(what) + ": a chunk of " + std::to_string(count) +
                    " elements must be " + std::to_string(count * sizeof(float)) +
                    " bytes, got " + std::to_string(got) + " (corrupt or truncated message?)");
  }
}

}  // namespace

std::size_t Fp32Sum::encode(std::span<const float> in, std::size_t, std::span<std::byte> out) {
  const std::size_t bytes = in.size_bytes();
  if (out.size() < bytes) {
    throw InvalidArgument("fp32-sum encode: output of " + std::to_string(out.size()) +
                          " bytes is too small for " + std::to_string(bytes));
  }
  if (bytes) std::memcpy(out.data(), in.data(), bytes);
  return bytes;
}

void Fp32Sum::decode(std::span<const std::byte> in, std::size_t, std::span<float> out) {
  check_bytes(in.size(), out.size(), "decode");
  if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
}

std::size_t Fp32Sum::reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                            std::size_t accum_bytes, const ReduceContext& context) {
  check_bytes(incoming.size(), context.count, "reduce (incoming)");
  check_bytes(accum_bytes, context.count, "reduce (accumulated)");
  // Both buffers hold fp32 at 4-byte aligned offsets (identity layout and
  // staging buffers from operator new); the loop vectorises.
  auto* __restrict acc = reinterpret_cast<float*>(accum.data());
  const auto* __restrict in = reinterpret_cast<const float*>(incoming.data());
  for (std::size_t i = 0; i < context.count; ++i) acc[i] += in[i];
  return accum_bytes;
}

}  // namespace qccl
