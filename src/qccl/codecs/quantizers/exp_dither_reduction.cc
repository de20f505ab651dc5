#include "qccl/codecs/quantizers/exp_dither_reduction.h"

#include <cfloat>
#include <cmath>
#include <vector>

#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// Exponential dithering E_s (Global-QSGD §4.2-4.3) as a Reduction on
// one-byte codes (exp_dither.h): encode quantizes y = |x|/norm to a power of
// two, pre-scaled by 2^-c; reduce is Algorithm 2's C_nat, drawing its random
// bits from the owner rank's reduce stream keyed by (hop, element), so each
// rounding happens once and its bytes are forwarded; decode returns the mean,
// value * 2^c * norm / n.
//
// The norm — a 2-norm of values near fp32's largest may exceed fp32 — is
// kept in double. Where it does, encode divides x·2^-m by norm·2^-m, a
// power of two that brings the norm into fp32 (exact for every x above
// 2^(m-126), and smaller ones lie far below the smallest level); decode
// multiplies in double. A decoded value beyond fp32's range — C_nat may
// round a partial sum up to the next power of two — saturates
// (saturate_to_fp32): the exact mean lies inside the range.
class ExpDitherReduction final : public Reduction {
 public:
  ExpDitherReduction(std::string name, double norm, int headroom, int ranks, CounterRng quantize,
                     const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), norm_(norm), c_(headroom), s_(exp_dither::levels(headroom)),
        mean_scale_(norm / ranks), quantize_(quantize), settings_(settings), step_(step) {
    while (std::ldexp(norm, -shift_) > FLT_MAX) ++shift_;
  }

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    std::span<const float> x = in;
    if (shift_ > 0) {
      scaled_.resize(in.size());
      const float down = std::ldexp(1.0f, -shift_);
      for (std::size_t i = 0; i < in.size(); ++i) scaled_[i] = in[i] * down;
      x = scaled_;
    }
    kernels::exp_encode(x.data(), reinterpret_cast<std::uint8_t*>(out.data()), x.size(),
                        static_cast<float>(std::ldexp(norm_, -shift_)), c_, s_,
                        quantize_.key_low(), quantize_.key_high(), first);
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    decode_codes(in, out, mean_scale_);
  }

  // One rank's code stands for value·2^c·norm, its own Q(x).
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    check(in.size(), out.size());
    decode_codes(in, out, norm_);
  }

  // Where encode needs no pre-scaling and decode_codes its fp32 kernel.
  std::optional<ElementForm> element_form() const override {
    if (shift_ > 0 || !fp32_decode(mean_scale_) || !fp32_decode(norm_)) return std::nullopt;
    return ElementForm{.code = ElementForm::Code::exp_i8, .scale = static_cast<float>(norm_), .levels = s_,
                       .headroom = c_, .key_low = quantize_.key_low(), .key_high = quantize_.key_high(),
                       .mean_step = static_cast<float>(mean_scale_), .own_step = static_cast<float>(norm_),
                       .seed = settings_.seed, .bucket = settings_.bucket, .step = step_};
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    const CounterRng rng = reduce_rng(settings_, step_, context);
    if (!kernels::exp_reduce(reinterpret_cast<std::uint8_t*>(accum.data()),
                             reinterpret_cast<const std::uint8_t*>(incoming.data()), context.count,
                             rng.key_low(), rng.key_high(), context.first)) {
      throw_corrupt_partial_sum(name_, context, "exceeds the exponent headroom");
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, count, count);
  }

  // sign · 2^(c-e) · scale: the kernel while no code (e >= 1, so at most
  // 2^(c-1) times the scale) can leave fp32's range, else in double,
  // saturated.
  void decode_codes(std::span<const std::byte> in, std::span<float> out, double scale) const {
    const auto* codes = reinterpret_cast<const std::uint8_t*>(in.data());
    if (fp32_decode(scale)) {
      kernels::exp_decode(codes, out.data(), out.size(), c_, static_cast<float>(scale));
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = saturate_to_fp32(exp_dither::value(codes[i], c_) * scale);
    }
  }

  // No code (e >= 1, at most 2^(c-1) times the scale) leaves fp32's range.
  bool fp32_decode(double scale) const {
    return std::ldexp(static_cast<double>(static_cast<float>(scale)), c_ - 1) <= FLT_MAX;
  }

  std::string name_;
  double norm_;
  int c_, s_;
  int shift_ = 0;  // encode divides x·2^-shift by norm·2^-shift
  double mean_scale_;
  std::vector<float> scaled_;  // x·2^-shift, when shift > 0
  CounterRng quantize_;
  CodecSettings settings_;
  std::uint64_t step_;
};

}  // namespace

std::unique_ptr<Reduction> make_exp_dither_reduction(std::string name, double norm, int headroom,
                                                     int ranks, CounterRng quantize,
                                                     const CodecSettings& settings,
                                                     std::uint64_t step) {
  return std::make_unique<ExpDitherReduction>(std::move(name), norm, headroom, ranks, quantize,
                                              settings, step);
}

}  // namespace qccl
