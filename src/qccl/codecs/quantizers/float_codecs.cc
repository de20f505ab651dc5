#include "qccl/codecs/quantizers/float_codecs.h"

#include <cmath>
#include <cstring>

#include "qccl/codecs/fp32_mean.h"
#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// fp32: the exact mean (or, for an allgather, the shards themselves), summed
// in transit without overflow (fp32_mean.h). The norm exchange guards
// against NaN/Inf and tells whether the sum needs scaling.
class Fp32Codec final : public Codec {
 public:
  using Codec::Codec;
  std::string spec() const override { return "fp32"; }
  CodecTraits traits() const override {
    return {.unbiased = true,
            .native_equivalent = true,
            .host_means = true,
            .zero_stays_zero = true,
            .device_step = true};
  }
  // n-1 additions of values <= n·norm, then a division: n·2^-23·norm.
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {.wire_bytes = q.count * sizeof(float),
            .max_abs_error = q.ranks * std::ldexp(q.inf_norm, -23)};
  }

 protected:
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    return make_fp32_mean_reduction(setup.norm, setup.summed);
  }
  void complete_step(const StepSetup& setup, Encoding*, const Operation& operation) override {
    finish_fp32_mean(setup.norm, setup.summed, operation.output);
  }
};

// fp16 values of x/n, summed in fp16 hop by hop (each sum rounded to nearest
// even by its owner and forwarded), decoded to fp32. An allgather sends x
// itself (n = 1).
class Fp16MeanReduction final : public Reduction {
 public:
  explicit Fp16MeanReduction(int ranks) : ranks_(static_cast<float>(ranks)) {}
  std::string name() const override { return "fp16"; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return 2 * count; }
  // MPI's collectives over the fp16 encodings (a user-defined fp16 sum).
  std::optional<NativeReduction> native_equivalent() const override {
    return NativeReduction{DataType::f16, ReduceOp::sum};
  }

  std::size_t encode(std::span<const float> in, std::size_t, std::span<std::byte> out) override {
    kernels::fp16_encode(in.data(), reinterpret_cast<_Float16*>(out.data()), in.size(),
                         1.0f / ranks_);
    return 2 * in.size();
  }
  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    kernels::fp16_decode(reinterpret_cast<const _Float16*>(in.data()), out.data(), out.size());
  }
  // This rank sent fp16(x/n): it stands for n·fp16(x/n).
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
    for (float& x : out) x *= ranks_;
  }
  std::optional<ElementForm> element_form() const override {
    return ElementForm{.code = ElementForm::Code::fp16, .scale = 1.0f / ranks_, .mean_step = 1.0f, .own_step = ranks_};
  }
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    kernels::fp16_add(reinterpret_cast<_Float16*>(accum.data()),
                      reinterpret_cast<const _Float16*>(incoming.data()), context.count);
    return accum_bytes;
  }

 private:
  static void check(std::size_t bytes, std::size_t count) {
    require_chunk_bytes("fp16", bytes, 2 * count, count);
  }
  float ranks_;
};

class Fp16Codec final : public Codec {
 public:
  using Codec::Codec;
  std::string spec() const override { return "fp16"; }
  // Round to nearest: biased.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .native_equivalent = true,
            .host_means = true,
            .zero_stays_zero = true,
            .device_step = true};
  }
  // n encodings and n-1 sums, each rounding by at most 2^-11 of a magnitude
  // <= norm (plus fp16's subnormal spacing 2^-24 each).
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {.wire_bytes = 2 * q.count,
            .max_abs_error =
                (2 * q.ranks - 1) * (std::ldexp(q.inf_norm, -11) + std::ldexp(1.0, -24))};
  }

 protected:
  // Every partial sum of values |x/n| <= 65504/n stays within fp16's range.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    constexpr double kFp16Max = 65504.0;
    const double largest = setup.norm;
    if (largest / setup.summed > kFp16Max) {
      throw InvalidArgument(step_name() + ": the largest |x| over the ranks is " +
                            std::to_string(largest) + ", so x/" + std::to_string(setup.summed) +
                            " exceeds fp16's largest value 65504; use fp32 or global-qsgd for "
                            "this tensor");
    }
    return std::make_unique<Fp16MeanReduction>(setup.summed);
  }
};

}  // namespace

std::unique_ptr<Codec> make_fp32_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return std::make_unique<Fp32Codec>(settings);
}

std::unique_ptr<Codec> make_fp16_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return std::make_unique<Fp16Codec>(settings);
}

}  // namespace qccl
