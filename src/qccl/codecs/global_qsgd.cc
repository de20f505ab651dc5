#include "qccl/codecs/global_qsgd.h"

#include <cmath>
#include <cstring>

#include "qccl/codecs/counter_rng.h"
#include "qccl/codecs/exp_dither.h"
#include "qccl/collectives/allreduce.h"
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

// Linear dithering L_s (Global-QSGD §4.2, Definition 1, Eq. 2) as a
// Reduction on int8 chunks. encode: y = |x|/norm in [0,1], scaled to s levels
// and rounded stochastically — up with probability equal to the fractional
// part, so E[level] = y·s — keeping the sign: q in [-s, s]. reduce: integer
// addition; |partial sum| <= n·s <= 127 by the choice of s, so a larger value
// can only come from corrupt data and is rejected. decode: the mean,
// q_sum · norm / (s·n) (Algorithm 1, line 9).
class LinearDitherReduction final : public Reduction {
 public:
  LinearDitherReduction(std::string name, double norm, int levels, int ranks, CounterRng rng)
      : name_(std::move(name)), levels_(levels), limit_(levels * ranks),
        norm_(static_cast<float>(norm)), scale_(static_cast<float>(levels / norm)),
        step_(static_cast<float>(norm / (static_cast<double>(levels) * ranks))), rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    auto* q = reinterpret_cast<std::int8_t*>(out.data());
    // For a tiny norm, s/norm overflows fp32 (and 0·inf would be NaN): then
    // divide by the norm first.
    const bool multiply = std::isfinite(scale_);
    const auto levels = static_cast<float>(levels_);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float v = multiply ? std::abs(in[i]) * scale_ : std::abs(in[i]) / norm_ * levels;
      const float lower = std::floor(v);
      int level = static_cast<int>(lower) + (rng_.uniform(first + i) < v - lower ? 1 : 0);
      level = std::min(level, levels_);  // |x| = norm may round v just above s
      q[i] = static_cast<std::int8_t>(std::signbit(in[i]) ? -level : level);
    }
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    const auto* q = reinterpret_cast<const std::int8_t*>(in.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(q[i]) * step_;
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    auto* a = reinterpret_cast<std::int8_t*>(accum.data());
    const auto* b = reinterpret_cast<const std::int8_t*>(incoming.data());
    int outside = 0;
    for (std::size_t i = 0; i < context.count; ++i) {
      const int sum = a[i] + b[i];
      outside |= static_cast<int>(sum > limit_) | static_cast<int>(sum < -limit_);
      a[i] = static_cast<std::int8_t>(sum);
    }
    if (outside) {
      throw CommError(name_ + ": a partial sum exceeds n·s = " + std::to_string(limit_) +
                      " at elements " + std::to_string(context.first) + ".." +
                      std::to_string(context.first + context.count) +
                      ", which valid input cannot produce (corrupt message?)");
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    if (bytes != count) {
      throw CommError(name_ + ": a chunk of " + std::to_string(count) + " elements must be " +
                      std::to_string(count) + " bytes, got " + std::to_string(bytes) +
                      " (corrupt or truncated message?)");
    }
  }

  std::string name_;
  int levels_, limit_;
  float norm_, scale_, step_;
  CounterRng rng_;
};

// Exponential dithering E_s (Global-QSGD §4.2-4.3) as a Reduction on
// one-byte codes (exp_dither.h): encode quantizes y = |x|/norm to a power of
// two, pre-scaled by 2^-c; reduce is Algorithm 2's C_nat, drawing its random
// bits from the owner rank's reduce stream keyed by (hop, element), so each
// rounding happens once and its bytes are forwarded; decode returns the mean,
// value * 2^c * norm / n.
class ExpDitherReduction final : public Reduction {
 public:
  ExpDitherReduction(std::string name, double norm, int headroom, int levels, int ranks,
                     CounterRng quantize, const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), norm_(static_cast<float>(norm)), c_(headroom), s_(levels),
        mean_scale_(norm / ranks), quantize_(quantize), settings_(settings), step_(step) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    auto* code = reinterpret_cast<std::uint8_t*>(out.data());
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float y = std::abs(in[i]) / norm_;
      code[i] = exp_dither::quantize(y, std::signbit(in[i]), c_, s_, quantize_.bits(first + i) >> 9);
    }
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    const auto* code = reinterpret_cast<const std::uint8_t*>(in.data());
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<float>(exp_dither::value(code[i], c_) * mean_scale_);
    }
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    const CounterRng rng(settings_.seed, step_, settings_.bucket,
                         static_cast<std::uint64_t>(context.rank), RngStream::reduce);
    const std::uint64_t hop_base = static_cast<std::uint64_t>(context.hop) << 40;
    auto* a = reinterpret_cast<std::uint8_t*>(accum.data());
    const auto* b = reinterpret_cast<const std::uint8_t*>(incoming.data());
    for (std::size_t i = 0; i < context.count; ++i) {
      const std::uint64_t element = context.first + i;
      if (!exp_dither::reduce(a[i], b[i], rng.bits64(hop_base + element), a[i])) {
        throw CommError(name_ + ": the partial sum at element " + std::to_string(element) +
                        " exceeds the exponent headroom, which valid input cannot produce "
                        "(corrupt message?)");
      }
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    if (bytes != count) {
      throw CommError(name_ + ": a chunk of " + std::to_string(count) + " elements must be " +
                      std::to_string(count) + " bytes, got " + std::to_string(bytes) +
                      " (corrupt or truncated message?)");
    }
  }

  std::string name_;
  float norm_;
  int c_, s_;
  double mean_scale_;
  CounterRng quantize_;
  CodecSettings settings_;
  std::uint64_t step_;
};

class GlobalQsgdCodec final : public Codec {
 public:
  GlobalQsgdCodec(GlobalQsgdConfig config, CodecSettings settings)
      : Codec(settings), config_(config) {}

  std::string spec() const override {
    return "global-qsgd:bits=" + std::to_string(config_.bits) +
           ",dither=" + (config_.dither == Dither::linear ? "linear" : "exp") +
           ",norm=" + std::string(to_string(config_.norm));
  }
  bool unbiased() const override { return true; }
  Aggregation aggregation() const override { return Aggregation::compressed_domain; }
  std::size_t wire_bytes(std::size_t count) const override {
    return (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
  }

 protected:
  // Algorithm 1: global norm (line 1), local quantization (lines 2-5), and
  // the allreduce of the quantized integers (line 9), decoded to the mean.
  void run_allreduce_mean(Communicator& comm, std::span<float> data,
                          const CollectiveOptions& options) override {
    const std::string what = spec() + " step " + std::to_string(step()) + " bucket " +
                             std::to_string(settings().bucket);
    const double norm = global_norm(comm, data, config_.norm, what,
                                    options.timeout.value_or(comm.options().timeout));
    if (config_.dither == Dither::exponential && options.algorithm == Algorithm::native) {
      throw InvalidArgument(spec() + ": runs on algorithm ring or tree");
    }
    const int n = comm.size();
    if (norm == 0.0) {  // every rank's input is zero, and every rank knows it
      std::fill(data.begin(), data.end(), 0.0f);
      return;
    }
    const CounterRng rng(settings().seed, step(), settings().bucket,
                         static_cast<std::uint64_t>(comm.rank()), RngStream::quantize);
    if (config_.dither == Dither::linear) {
      LinearDitherReduction reduction(spec(), norm, linear_levels_per_rank(config_.bits, n), n, rng);
      allreduce(comm, data, reduction, options);
      return;
    }
    const int c = exp_dither::headroom(n, options.algorithm == Algorithm::ring);
    ExpDitherReduction reduction(spec(), norm, c, exp_dither::levels(c), n, rng, settings(), step());
    allreduce(comm, data, reduction, options);
  }

 private:
  GlobalQsgdConfig config_;
};

}  // namespace

std::unique_ptr<Codec> make_global_qsgd_codec(const GlobalQsgdConfig& config,
                                              CodecSettings settings) {
  if (config.bits != 8) {
    throw InvalidArgument("global-qsgd: bits=" + std::to_string(config.bits) +
                          " is not available; valid: 8");
  }
  return std::make_unique<GlobalQsgdCodec>(config, settings);
}

std::unique_ptr<Codec> make_global_qsgd_codec(const CodecSpec& spec, CodecSettings settings) {
  CodecParams params(spec);
  GlobalQsgdConfig config;
  config.bits = std::stoi(params.choice("bits", {"8"}, "8"));
  config.dither = params.choice("dither", {"linear", "exp"}, "linear") == "linear"
                      ? Dither::linear
                      : Dither::exponential;
  config.norm = params.choice("norm", {"inf", "2"}, "inf") == "inf" ? NormKind::inf : NormKind::two;
  params.finish();
  return make_global_qsgd_codec(config, settings);
}

}  // namespace qccl
