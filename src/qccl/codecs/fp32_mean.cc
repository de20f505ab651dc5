#include "qccl/codecs/fp32_mean.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "qccl/codecs/levels.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// fp32 values summed hop by hop in fp32 (Fp32Sum's reduce), decoded to
// the mean (SumScaling). Without scaling the values travel as they are,
// on the caller's buffer (identity layout, as Fp32Sum), and the sum is
// divided by n when the step completes (finish_fp32_mean); with it, they
// travel times 2^-k and decode to the mean. Either way its element form
// says the whole arithmetic, the division included.
class Fp32MeanSum final : public Reduction {
 public:
  Fp32MeanSum(SumScaling scaling, int summed) : scaling_(scaling), summed_(summed) {}

  std::string name() const override { return scaling_.active() ? "fp32-sum-scaled" : sum_.name(); }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count * sizeof(float); }
  bool identity_layout() const override { return !scaling_.active(); }
  std::optional<NativeReduction> native_equivalent() const override { return sum_.native_equivalent(); }

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
  std::optional<ElementForm> element_form() const override { return scaling_.element_form(summed_); }

 private:
  SumScaling scaling_;
  int summed_;
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

// The form of a step whose mean is the decoded sum over `summed` ranks
// (plain; a scaled sum decodes to the mean itself).
ElementForm SumScaling::element_form(int summed) const {
  ElementForm form{.code = ElementForm::Code::fp32_summed, .scale = down_, .own_step = up_};
  form.ranks = summed;
  if (active()) form.wide_mean_step = to_mean_;
  return form;
}

std::unique_ptr<Reduction> make_fp32_mean_reduction(double norm, int summed) {
  return std::make_unique<Fp32MeanSum>(SumScaling::for_sum(norm, summed), summed);
}

void finish_fp32_mean(double norm, int summed, std::span<float> output) {
  if (summed == 1 || SumScaling::for_sum(norm, summed).active()) return;
  const auto n = static_cast<float>(summed);
  for (float& x : output) x /= n;
}

}  // namespace qccl
