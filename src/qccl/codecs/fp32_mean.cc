#include "qccl/codecs/fp32_mean.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "qccl/codecs/levels.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// fp32 values times 2^-k on the wire, summed in fp32 hop by hop; decoded
// to the mean (SumScaling).
class ScaledFp32Sum final : public Reduction {
 public:
  explicit ScaledFp32Sum(SumScaling scaling) : scaling_(scaling) {}

  std::string name() const override { return "fp32-sum-scaled"; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count * sizeof(float); }
  std::optional<NativeReduction> native_equivalent() const override {
    return NativeReduction{DataType::f32, ReduceOp::sum};
  }

  std::size_t encode(std::span<const float> in, std::size_t, std::span<std::byte> out) override {
    auto* values = reinterpret_cast<float*>(out.data());
    for (std::size_t i = 0; i < in.size(); ++i) values[i] = scaling_.encode(in[i]);
    return in.size_bytes();
  }
  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    require_chunk_bytes(name(), in.size(), out.size_bytes(), out.size());
    const auto* values = reinterpret_cast<const float*>(in.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = scaling_.mean(values[i]);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    require_chunk_bytes(name(), in.size(), out.size_bytes(), out.size());
    const auto* values = reinterpret_cast<const float*>(in.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = scaling_.contribution(values[i]);
  }
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    return sum_.reduce(incoming, accum, accum_bytes, context);
  }

 private:
  SumScaling scaling_;
  Fp32Sum sum_;
};

}  // namespace

SumScaling SumScaling::for_sum(double bound, int summed) {
  SumScaling scaling;
  if (summed <= 1 || !(summed * bound > FLT_MAX / 2)) return scaling;
  int k = 0;
  while ((std::int64_t{1} << k) < summed) ++k;
  scaling.shift_ = k;
  scaling.down_ = std::ldexp(1.0f, -k);
  scaling.up_ = std::ldexp(1.0f, k);
  scaling.to_mean_ = std::ldexp(1.0, k) / summed;
  return scaling;
}

std::unique_ptr<Reduction> make_fp32_mean_reduction(double norm, int summed) {
  const SumScaling scaling = SumScaling::for_sum(norm, summed);
  if (!scaling.active()) return std::make_unique<Fp32Sum>();
  return std::make_unique<ScaledFp32Sum>(scaling);
}

void finish_fp32_mean(double norm, int summed, std::span<float> output) {
  if (summed == 1 || SumScaling::for_sum(norm, summed).active()) return;
  const auto n = static_cast<float>(summed);
  for (float& x : output) x /= n;
}

}  // namespace qccl
