#include "qccl/collectives/encoding.h"

#include "qccl/common/errors.h"

namespace qccl {

// Decodes into the scratch space, then adds it: what an encoding without a
// fused kernel does. The sum is one fp32 addition per element, so a fused
// version must give the same bits.
void Encoding::decode_add(std::span<const std::byte> in, std::size_t first, std::span<float> out,
                          std::span<float> scratch) {
  if (scratch.size() < out.size()) {
    throw InvalidArgument(name() + ": decode_add needs scratch space for " +
                          std::to_string(out.size()) + " values, got " +
                          std::to_string(scratch.size()));
  }
  const auto decoded = scratch.first(out.size());
  decode(in, first, decoded);
  float* __restrict sum = out.data();
  const float* __restrict add = decoded.data();
  for (std::size_t i = 0; i < out.size(); ++i) sum[i] += add[i];
}

}  // namespace qccl
