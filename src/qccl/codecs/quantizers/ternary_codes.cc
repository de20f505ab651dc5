#include "qccl/codecs/quantizers/ternary_codes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "qccl/codecs/kernels/kernels.h"
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

void check_scales(const TernaryScales& scales, std::string_view name) {
  const auto& bounds = scales.bounds;
  bool valid = bounds.size() >= 2 && scales.scales.size() + 1 == bounds.size() &&
               std::is_sorted(bounds.begin(), bounds.end());
  for (double s : scales.scales) valid = valid && std::isfinite(s) && s >= 0;
  if (!valid) {
    throw InvalidArgument(std::string(name) + ": tensor bounds and scales do not match, or a "
                          "scale is negative or not finite");
  }
}

// f(t, begin, end) for each tensor t that elements [first, first + count)
// overlap, with the overlap [begin, end), in tensor order.
template <class F>
void for_each_tensor(const TernaryScales& scales, std::string_view name, std::size_t first,
                     std::size_t count, F&& f) {
  if (count == 0) return;
  const std::size_t end = first + count;
  const auto& bounds = scales.bounds;
  if (first < bounds.front() || end > bounds.back()) {
    throw InvalidArgument(std::string(name) + ": a chunk of elements " + std::to_string(first) +
                          ".." + std::to_string(end) + " lies outside the elements " +
                          std::to_string(bounds.front()) + ".." + std::to_string(bounds.back()) +
                          " of its tensors");
  }
  auto t = static_cast<std::size_t>(
      std::upper_bound(bounds.begin(), bounds.end() - 1, first) - bounds.begin() - 1);
  for (; t + 1 < bounds.size() && bounds[t] < end; ++t) {
    const std::size_t begin = std::max(bounds[t], first), stop = std::min(bounds[t + 1], end);
    if (begin < stop) f(t, begin, stop);
  }
}

// One tensor's scale in the fp32 forms the arithmetic uses, each rounded
// once from the double s_t (itself an fp32 value, a largest |x|).
struct TensorScale {
  float value = 0;      // fl(s_t): one rank's ±1 level; the encoder's norm
  float mean_step = 0;  // fl(s_t/summed): one level of the mean
};

// TernGrad (Wen et al. 2017, §3, the ternarizing rule s_t · sign(g) ∘ b,
// b ~ Bernoulli(|g|/s_t)), layer by layer: each tensor's elements are
// rounded by encode_levels with one level on that tensor's s_t, which is
// exactly that Bernoulli rounding; the levels of all ranks share s_t, so
// they add up as integers. See ternary_codes.h for the two wires.
}  // namespace

class TernaryLevels {
 public:
  TernaryLevels(TernarySetup setup, CounterRng rng)
      : setup_(std::move(setup)), rng_(rng) {
    if (setup_.summed < 1 || (int8() && setup_.summed > kTernaryInt8MaxRanks)) {
      throw InvalidArgument(setup_.name + ": int8 partial sums of " +
                            std::to_string(setup_.summed) + " ranks' levels do not fit (at most " +
                            std::to_string(kTernaryInt8MaxRanks) + " ranks)");
    }
    set_scales(std::move(setup_.scales));
  }

  std::string name() const { return setup_.name; }
  std::size_t granularity() const { return int8() ? 1 : kCodesPerByte; }
  std::size_t max_encoded_bytes(std::size_t count) const {
    return int8() ? count : packed_bytes(count);
  }

  void set_scales(TernaryScales scales) {
    check_scales(scales, setup_.name);
    setup_.scales = std::move(scales);
    tensors_.clear();
    for (double s : setup_.scales.scales) {
      tensors_.push_back({static_cast<float>(s),
                          static_cast<float>(s / static_cast<double>(setup_.summed))});
    }
  }
  const TernaryScales& scales() const { return setup_.scales; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) {
    if (int8()) {
      encode_ternary(in, first, reinterpret_cast<std::int8_t*>(out.data()));
      return in.size();
    }
    std::vector<std::int8_t>& q = scratch(in.size());
    encode_ternary(in, first, q.data());
    const std::size_t bytes = packed_bytes(in.size());
    auto* packed = reinterpret_cast<std::uint8_t*>(out.data());
    std::fill(packed, packed + bytes, std::uint8_t{0});
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto code = static_cast<std::uint8_t>(q[i] & 0b11);
      packed[i / kCodesPerByte] |= static_cast<std::uint8_t>(code << (2 * (i % kCodesPerByte)));
    }
    return bytes;
  }

  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) {
    if (int8()) {
      decode_tensors(checked_sums(in, out.size()), first, out, &TensorScale::mean_step);
    } else if (setup_.integer_levels) {
      kernels::linear_decode_i8(unpack(in, out.size()), out.data(), out.size(), 1.0f);
    } else {
      decode_tensors(unpack(in, out.size()), first, out, &TensorScale::value);
    }
  }

  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) {
    const std::int8_t* q = int8() ? checked_sums(in, out.size()) : unpack(in, out.size());
    decode_tensors(q, first, out, &TensorScale::value);
  }

  // int8: the integer addition of Global-QSGD's linear sum reduction
  // (linear_dither.cc) with one level per rank, |Σq| <= summed.
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) {
    checked_sums(incoming, context.count);
    require_chunk_bytes(setup_.name, accum_bytes, context.count, context.count);
    if (!kernels::add_i8_checked(reinterpret_cast<std::int8_t*>(accum.data()),
                                 reinterpret_cast<const std::int8_t*>(incoming.data()),
                                 context.count, setup_.summed)) {
      throw_corrupt_partial_sum(setup_.name, context,
                                "exceeds n = " + std::to_string(setup_.summed));
    }
    return accum_bytes;
  }

  bool int8() const { return setup_.wire == TernaryWire::int8_sums; }

 private:
  // Levels of elements [first, first + in.size()) into q, each tensor's
  // segment on its own scale. A tensor with s_t = 0 is zero on every rank:
  // its levels are 0 (encode_levels would divide 0 by 0).
  void encode_ternary(std::span<const float> in, std::size_t first, std::int8_t* q) const {
    for_each_tensor(setup_.scales, setup_.name, first, in.size(),
                    [&](std::size_t t, std::size_t begin, std::size_t end) {
                      const std::size_t at = begin - first, count = end - begin;
                      const TensorScale& scale = tensors_[t];
                      if (scale.value == 0.0f) {
                        std::fill(q + at, q + at + count, std::int8_t{0});
                        return;
                      }
                      encode_levels(in.subspan(at, count), begin, q + at, scale.value, 1,
                                    rng_);
                    });
  }

  // out = q times each tensor's `factor`, segment by segment.
  void decode_tensors(const std::int8_t* q, std::size_t first, std::span<float> out,
                      float TensorScale::*factor) const {
    for_each_tensor(setup_.scales, setup_.name, first, out.size(),
                    [&](std::size_t t, std::size_t begin, std::size_t end) {
                      const std::size_t at = begin - first;
                      kernels::linear_decode_i8(q + at, out.data() + at, end - begin,
                                                tensors_[t].*factor);
                    });
  }

  // An int8 chunk of `count` elements, after checking its size.
  const std::int8_t* checked_sums(std::span<const std::byte> in, std::size_t count) const {
    require_chunk_bytes(setup_.name, in.size(), count, count);
    return reinterpret_cast<const std::int8_t*>(in.data());
  }

  // The levels of a 2-bit chunk of `count` elements into scratch_, after
  // checking its size and every code.
  const std::int8_t* unpack(std::span<const std::byte> in, std::size_t count) {
    require_chunk_bytes(setup_.name, in.size(), packed_bytes(count), count);
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
    return q.data();
  }

  [[noreturn]] void throw_corrupt(std::size_t element) const {
    throw CommError(setup_.name + ": invalid 2-bit code at element " + std::to_string(element) +
                    " of a chunk (corrupt message?)");
  }

  std::vector<std::int8_t>& scratch(std::size_t count) {
    if (scratch_.size() < count) scratch_.resize(count);
    return scratch_;
  }

  TernarySetup setup_;
  CounterRng rng_;
  std::vector<TensorScale> tensors_;   // tensor t's scale forms
  std::vector<std::int8_t> scratch_;  // levels of one 2-bit chunk
};

namespace {

// The two wires as collectives see them, on one step's shared levels: the
// 2-bit codes are only gathered (an Encoding); the int8 sums also add in
// transit (a Reduction).
template <class Base>
class TernaryView : public Base {
 public:
  explicit TernaryView(std::shared_ptr<TernaryLevels> levels) : levels_(std::move(levels)) {}
  std::string name() const override { return levels_->name(); }
  std::size_t granularity() const override { return levels_->granularity(); }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return levels_->max_encoded_bytes(count);
  }
  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    return levels_->encode(in, first, out);
  }
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    levels_->decode(in, first, out);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    levels_->decode_contribution(in, first, out);
  }

 protected:
  std::shared_ptr<TernaryLevels> levels_;
};

using TernaryCodesEncoding = TernaryView<Encoding>;

class TernarySumsReduction final : public TernaryView<Reduction> {
 public:
  using TernaryView::TernaryView;
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    return levels_->reduce(incoming, accum, accum_bytes, context);
  }
};

}  // namespace

TernaryStep::TernaryStep(TernarySetup setup, CounterRng quantize)
    : levels_(std::make_shared<TernaryLevels>(std::move(setup), quantize)) {}

std::unique_ptr<Encoding> TernaryStep::encoding() const {
  if (levels_->int8()) return std::make_unique<TernarySumsReduction>(levels_);
  return std::make_unique<TernaryCodesEncoding>(levels_);
}

void TernaryStep::set_scales(TernaryScales scales) { levels_->set_scales(std::move(scales)); }

const TernaryScales& TernaryStep::scales() const { return levels_->scales(); }

void scale_level_sums(const TernaryScales& scales, std::size_t first, std::span<float> out,
                      int summed) {
  check_scales(scales, "terngrad");
  for_each_tensor(scales, "terngrad", first, out.size(),
                  [&](std::size_t t, std::size_t begin, std::size_t end) {
                    const auto step = static_cast<float>(scales.scales[t] / (1.0 * summed));
                    for (std::size_t i = begin - first; i < end - first; ++i) {
                      out[i] = out[i] * step;
                    }
                  });
}

}  // namespace qccl
