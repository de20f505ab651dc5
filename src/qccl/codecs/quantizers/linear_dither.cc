#include "qccl/codecs/quantizers/linear_dither.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "qccl/codecs/group_data_path.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {

int linear_levels_per_rank(int bits, int ranks) {
  const int largest = (1 << (bits - 1)) - 1;  // largest signed A-bit value
  const int levels = largest / ranks;
  if (levels < 1) {
    throw InvalidArgument("global-qsgd linear dithering at " + std::to_string(bits) +
                          " bits leaves no quantization level for " + std::to_string(ranks) +
                          " ranks (the in-transit sum must fit in " + std::to_string(largest) +
                          "); use at most " + std::to_string(largest) + " ranks");
  }
  return levels;
}

namespace {

// Whether encode_levels and decode_levels take their fp32 kernels for this
// scale and decoding step: the paths the element form describes.
bool fast_path(float scale, double step) {
  return encode_levels_uses_kernel(scale) && decode_levels_uses_kernel(step);
}

// Linear dithering L_s (Global-QSGD §4.2, Definition 1, Eq. 2) as a
// Reduction on int8 chunks. encode: y = |x|/norm in [0,1], scaled to s levels
// and rounded stochastically — up with probability equal to the fractional
// part, so E[level] = y·s — keeping the sign: q in [-s, s]. reduce: integer
// addition; |partial sum| <= n·s <= 127 by the choice of s, so a larger value
// can only come from corrupt data and is rejected. decode: the mean,
// q_sum · norm / (s·n) (Algorithm 1, line 9).
class LinearDitherReduction final : public Reduction, public SummedIntegers {
 public:
  LinearDitherReduction(std::string name, double norm, int levels, int ranks, CounterRng rng)
      : name_(std::move(name)), levels_(levels), limit_(levels * ranks), norm_(norm),
        step_(norm / (static_cast<double>(levels) * ranks)), level_(norm / levels), rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }
  std::size_t integer_width() const override { return 1; }  // int8 levels, summed exactly

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    encode_levels(in, first, reinterpret_cast<std::int8_t*>(out.data()), norm_, levels_, rng_);
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    decode_levels(reinterpret_cast<const std::int8_t*>(in.data()), out.data(), out.size(), step_);
  }

  // One rank's levels q stand for q·norm/s.
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    check(in.size(), out.size());
    decode_levels(reinterpret_cast<const std::int8_t*>(in.data()), out.data(), out.size(), level_);
  }

  // Levels summed in int8 (the reduce needs no generator).
  std::optional<ElementForm> element_form() const override {
    const auto scale = static_cast<float>(levels_ / norm_);
    if (!fast_path(scale, step_) || !fast_path(scale, level_)) return std::nullopt;
    return ElementForm{.code = ElementForm::Code::linear_i8_summed, .scale = scale, .levels = levels_,
                       .key_low = rng_.key_low(), .key_high = rng_.key_high(),
                       .mean_step = static_cast<float>(step_), .own_step = static_cast<float>(level_),
                       .limit = limit_};
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    if (!kernels::add_i8_checked(reinterpret_cast<std::int8_t*>(accum.data()),
                                 reinterpret_cast<const std::int8_t*>(incoming.data()),
                                 context.count, limit_)) {
      throw_corrupt_partial_sum(name_, context, "exceeds n·s = " + std::to_string(limit_));
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, count, count);
  }

  std::string name_;
  int levels_, limit_;
  // The norm (which a 2-norm of values near fp32's largest may exceed fp32
  // by far), one level of the mean, one level of a rank's values.
  double norm_, step_, level_;
  CounterRng rng_;
};

// Linear dithering with averaging inside every reduction step (Global-QSGD
// §8), for bit widths where summing would overflow (4-bit, or 8-bit beyond
// 127 ranks). Each rank quantizes to s = 2^(A-1) - 1 levels; a chunk is
// [uint32 k][packed A-bit two's-complement levels], where k is how many ranks
// the chunk already averages. Combining (q_a, k_a) with (q_b, k_b) rounds the
// weighted mean (k_a q_a + k_b q_b) / (k_a + k_b) stochastically, up with
// probability equal to its fractional part: unbiased for any n (no
// saturation, unlike averaging pairs for n > 4), always within [-s, s] (a
// convex combination), and already the mean at the end (no final division to
// forget for n = 2). decode checks that the chunk averages all n ranks.
class LinearAverageReduction final : public Reduction {
 public:
  LinearAverageReduction(std::string name, double norm, int bits, int ranks, CounterRng quantize,
                         const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), bits_(bits), levels_((1 << (bits - 1)) - 1), ranks_(ranks),
        norm_(norm), value_(norm / levels_), quantize_(quantize), settings_(settings),
        step_(step) {}

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return bits_ == 4 ? 2 : 1; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return kHeader + payload_bytes(count);
  }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    write_header(out, 1);
    auto* payload = reinterpret_cast<std::uint8_t*>(out.data() + kHeader);
    if (bits_ == 8) {
      encode_levels(in, first, reinterpret_cast<std::int8_t*>(payload), norm_, levels_, quantize_);
    } else {
      encode_levels_i4(in, first, payload, norm_, levels_, quantize_);
    }
    return kHeader + payload_bytes(in.size());
  }

  // The mean over all n ranks: the chunk must average every one of them.
  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    decode_averaging(in, out, static_cast<std::uint32_t>(ranks_), "a decoded chunk");
  }

  // One rank's own chunk (k = 1) holds its levels, each worth norm/s.
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    decode_averaging(in, out, 1, "a rank's own chunk");
  }

  std::optional<ElementForm> element_form() const override {
    const auto scale = static_cast<float>(levels_ / norm_);
    if (!fast_path(scale, value_)) return std::nullopt;
    return ElementForm{.code = bits_ == 8 ? ElementForm::Code::linear_i8_averaged
                                          : ElementForm::Code::linear_i4_averaged,
                       .header_bytes = kHeader, .scale = scale, .levels = levels_,
                       .key_low = quantize_.key_low(), .key_high = quantize_.key_high(),
                       .mean_step = static_cast<float>(value_), .own_step = static_cast<float>(value_),
                       .ranks = ranks_, .seed = settings_.seed, .bucket = settings_.bucket,
                       .step = step_};
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    const std::uint32_t ka = read_header(accum), kb = read_header(incoming);
    const std::uint64_t k = std::uint64_t{ka} + kb;
    if (ka == 0 || kb == 0 || k > static_cast<std::uint64_t>(ranks_)) {
      throw CommError(name_ + ": chunks averaging " + std::to_string(ka) + " and " +
                      std::to_string(kb) + " ranks cannot be combined among " +
                      std::to_string(ranks_) + " (corrupt message?)");
    }
    if (k >= kMaxRanksAveraged) {
      throw CommError(name_ + ": averaging " + std::to_string(k) + " ranks exceeds the supported " +
                      std::to_string(kMaxRanksAveraged));
    }
    const CounterRng rng = reduce_rng(settings_, step_, context);
    auto* a = accum.data() + kHeader;
    const auto* b = incoming.data() + kHeader;
    if (bits_ == 8) {
      kernels::average_i8(reinterpret_cast<const std::int8_t*>(a), reinterpret_cast<const std::int8_t*>(b),
                          reinterpret_cast<std::int8_t*>(a), context.count, static_cast<std::int32_t>(ka),
                          static_cast<std::int32_t>(kb), rng.key_low(), rng.key_high(), context.first);
    } else {
      average_i4(reinterpret_cast<std::uint8_t*>(a), reinterpret_cast<const std::uint8_t*>(b),
                 context.count, static_cast<std::int32_t>(ka), static_cast<std::int32_t>(kb), rng,
                 context.first);
    }
    write_header(accum, static_cast<std::uint32_t>(k));
    return accum_bytes;
  }

 private:
  static constexpr std::size_t kHeader = 4;
  // The averaging kernel's fp32 floor is exact below 2^24 / 127 ranks.
  static constexpr std::uint64_t kMaxRanksAveraged = (std::uint64_t{1} << 24) / 127;

  // Levels · norm/s, after checking the chunk averages `expected` ranks.
  void decode_averaging(std::span<const std::byte> in, std::span<float> out,
                        std::uint32_t expected, std::string_view what) {
    check(in.size(), out.size());
    const std::uint32_t k = read_header(in);
    if (k != expected) {
      throw CommError(name_ + ": " + std::string(what) + " averages " + std::to_string(k) +
                      " of " + std::to_string(ranks_) + " ranks, not " + std::to_string(expected) +
                      " (incomplete or corrupt aggregation)");
    }
    const auto* payload = reinterpret_cast<const std::uint8_t*>(in.data() + kHeader);
    if (bits_ == 4) {
      decode_levels_i4(payload, out.data(), out.size(), value_);
    } else {
      decode_levels(reinterpret_cast<const std::int8_t*>(payload), out.data(), out.size(), value_);
    }
  }

  // a = the stochastic weighted mean of packed 4-bit levels a and b,
  // unpacked and packed again one L1-sized block at a time (the generator's
  // counter is the element index, so blocks draw what one pass would).
  static void average_i4(std::uint8_t* a, const std::uint8_t* b, std::size_t count,
                         std::int32_t ka, std::int32_t kb, const CounterRng& rng,
                         std::size_t first) {
    constexpr std::size_t kBlock = 4096;  // even: blocks start on a byte
    std::int8_t qa[kBlock], qb[kBlock];
    for (std::size_t at = 0; at < count; at += kBlock) {
      const std::size_t m = std::min(kBlock, count - at);
      kernels::unpack_i4(a + at / 2, qa, m);
      kernels::unpack_i4(b + at / 2, qb, m);
      kernels::average_i8(qa, qb, qa, m, ka, kb, rng.key_low(), rng.key_high(), first + at);
      kernels::pack_i4(qa, a + at / 2, m);
    }
  }

  std::size_t payload_bytes(std::size_t count) const {
    return bits_ == 4 ? (count + 1) / 2 : count;
  }
  static void write_header(std::span<std::byte> chunk, std::uint32_t k) {
    std::memcpy(chunk.data(), &k, kHeader);
  }
  static std::uint32_t read_header(std::span<const std::byte> chunk) {
    std::uint32_t k;
    std::memcpy(&k, chunk.data(), kHeader);
    return k;
  }
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, kHeader + payload_bytes(count), count);
  }

  std::string name_;
  int bits_, levels_, ranks_;
  double norm_, value_;  // the norm and one level, in double (see LinearDitherReduction)
  CounterRng quantize_;
  CodecSettings settings_;
  std::uint64_t step_;
};

}  // namespace

std::unique_ptr<Reduction> make_linear_sum_reduction(std::string name, double norm, int levels,
                                                     int ranks, CounterRng quantize) {
  return std::make_unique<LinearDitherReduction>(std::move(name), norm, levels, ranks, quantize);
}

std::unique_ptr<Reduction> make_linear_average_reduction(std::string name, double norm, int bits,
                                                         int ranks, CounterRng quantize,
                                                         const CodecSettings& settings,
                                                         std::uint64_t step) {
  return std::make_unique<LinearAverageReduction>(std::move(name), norm, bits, ranks, quantize,
                                                  settings, step);
}

}  // namespace qccl
