#include "qccl/codecs/ternary_codes.h"

#include <vector>

#include "qccl/codecs/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

constexpr std::size_t kCodesPerByte = 4;

// Two's-complement 2-bit codes: 00 = 0, 01 = +1, 11 = -1; 10 is never
// written, and neither are the unused high bits of a chunk's last byte, so
// a decoder that meets either has a corrupt chunk.
constexpr std::uint8_t kInvalidCode = 0b10;

std::size_t packed_bytes(std::size_t count) { return (count + kCodesPerByte - 1) / kCodesPerByte; }

// Wen et al. 2017 (TernGrad's ternarizing, s_t · sign(g) ∘ b, b ~ Bernoulli(|g|/s_t))
// with the shared scale s_t = the global ∞-norm: linear dithering with one
// level per rank (encode_levels) is exactly that Bernoulli rounding.
class TernaryCodesReduction final : public Reduction {
 public:
  TernaryCodesReduction(std::string name, double norm, float unit, CounterRng rng)
      : name_(std::move(name)), norm_(static_cast<float>(norm)),
        scale_(static_cast<float>(1.0 / norm)), unit_(unit), rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return kCodesPerByte; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return packed_bytes(count); }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    std::vector<std::int8_t>& q = scratch(in.size());
    encode_levels(in, first, q.data(), scale_, norm_, 1, rng_);
    const std::size_t bytes = packed_bytes(in.size());
    auto* packed = reinterpret_cast<std::uint8_t*>(out.data());
    std::fill(packed, packed + bytes, std::uint8_t{0});
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto code = static_cast<std::uint8_t>(q[i] & 0b11);
      packed[i / kCodesPerByte] |= static_cast<std::uint8_t>(code << (2 * (i % kCodesPerByte)));
    }
    return bytes;
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    unpack(in, out);
    kernels::linear_decode_i8(scratch_.data(), out.data(), out.size(), unit_);
  }

  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    unpack(in, out);
    kernels::linear_decode_i8(scratch_.data(), out.data(), out.size(), norm_);
  }

  std::size_t reduce(std::span<const std::byte>, std::span<std::byte>, std::size_t,
                     const ReduceContext&) override {
    throw InvalidArgument(name_ + " with 2-bit codes has no in-transit reduction (a sum of "
                          "ternary values needs more bits); it aggregates by gathering");
  }

 private:
  // The levels of a chunk of out.size() elements into scratch_, after
  // checking its size and every code.
  void unpack(std::span<const std::byte> in, std::span<float> out) {
    const std::size_t count = out.size();
    require_chunk_bytes(name_, in.size(), packed_bytes(count), count);
    std::vector<std::int8_t>& q = scratch(count);
    const auto* packed = reinterpret_cast<const std::uint8_t*>(in.data());
    for (std::size_t i = 0; i < count; ++i) {
      const auto code = static_cast<std::uint8_t>(
          (packed[i / kCodesPerByte] >> (2 * (i % kCodesPerByte))) & 0b11);
      if (code == kInvalidCode) throw_corrupt(i);
      q[i] = static_cast<std::int8_t>(code == 0b11 ? -1 : code);
    }
    const std::size_t used_bits = 2 * (count % kCodesPerByte);
    if (used_bits != 0 && (packed[count / kCodesPerByte] >> used_bits) != 0) throw_corrupt(count);
  }

  [[noreturn]] void throw_corrupt(std::size_t element) const {
    throw CommError(name_ + ": invalid 2-bit code at element " + std::to_string(element) +
                    " of a chunk (corrupt message?)");
  }

  std::vector<std::int8_t>& scratch(std::size_t count) {
    if (scratch_.size() < count) scratch_.resize(count);
    return scratch_;
  }

  std::string name_;
  float norm_, scale_, unit_;
  CounterRng rng_;
  std::vector<std::int8_t> scratch_;  // levels of one chunk
};

}  // namespace

std::unique_ptr<Reduction> make_ternary_codes_reduction(std::string name, double norm,
                                                        float unit, CounterRng quantize) {
  return std::make_unique<TernaryCodesReduction>(std::move(name), norm, unit, quantize);
}

}  // namespace qccl
