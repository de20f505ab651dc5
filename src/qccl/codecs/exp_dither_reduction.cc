#include "qccl/codecs/exp_dither_reduction.h"

#include "qccl/codecs/exp_dither.h"
#include "qccl/codecs/kernels.h"
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
class ExpDitherReduction final : public Reduction {
 public:
  ExpDitherReduction(std::string name, double norm, int headroom, int ranks, CounterRng quantize,
                     const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), norm_(static_cast<float>(norm)), c_(headroom),
        s_(exp_dither::levels(headroom)),
        mean_scale_(norm / ranks), quantize_(quantize), settings_(settings), step_(step) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    kernels::exp_encode(in.data(), reinterpret_cast<std::uint8_t*>(out.data()), in.size(), norm_,
                        c_, s_, quantize_.key_low(), quantize_.key_high(), first);
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    kernels::exp_decode(reinterpret_cast<const std::uint8_t*>(in.data()), out.data(), out.size(),
                        c_, static_cast<float>(mean_scale_));
  }

  // One rank's code stands for value·2^c·norm, its own Q(x).
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    check(in.size(), out.size());
    kernels::exp_decode(reinterpret_cast<const std::uint8_t*>(in.data()), out.data(), out.size(),
                        c_, norm_);
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

  std::string name_;
  float norm_;
  int c_, s_;
  double mean_scale_;
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
