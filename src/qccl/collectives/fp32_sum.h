// The uncompressed reduction: fp32 addition. Its encoding is the fp32 bytes
// themselves (identity layout), so ring and halving-doubling run directly on
// the caller's buffer, and algorithm native maps it to
// MPI_Allreduce(MPI_FLOAT, MPI_SUM).
#pragma once

#include "qccl/collectives/reduction.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Fp32Sum final : public Reduction {
 public:
  std::string name() const override { return "fp32-sum"; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count * sizeof(float); }
  bool identity_layout() const override { return true; }
  std::optional<NativeReduction> native_equivalent() const override {
    return NativeReduction{DataType::f32, ReduceOp::sum};
  }
  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override;
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override;
};

}  // namespace qccl
QCCL_API_END
