#include "qccl/codecs/quantizers/qsgd.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct QsgdConfig {
  int bits = 8;               // sign + level bits per element
  std::size_t bucket = 512;   // elements per norm
  NormKind norm = NormKind::two;
};

// One rank's QSGD encoding of a chunk: for each bucket of `bucket` elements,
// [float local norm · 2^-8], then all levels (int8, or int4 packed two per
// byte). The header is scaled by a power of two — exact for every norm
// above 2^-118 — so that the 2-norm of a bucket of values near fp32's
// largest (up to √4096 = 2^6 times it) fits in fp32.
// Levels are the linear stochastic rounding of |x|/norm_bucket to s levels,
// s = 2^(bits-1) - 1, unbiased. reduce is not defined: QSGD's scales differ
// per rank, so it aggregates by allgather and decode.
class QsgdEncoding final : public Encoding {
 public:
  QsgdEncoding(std::string name, QsgdConfig config, CounterRng rng)
      : name_(std::move(name)), config_(config), levels_((1 << (config.bits - 1)) - 1), rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return config_.bucket; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return buckets(count) * sizeof(float) + payload_bytes(count);
  }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    const std::size_t nb = buckets(in.size());
    auto* payload = reinterpret_cast<std::uint8_t*>(out.data() + nb * sizeof(float));
    auto* q = config_.bits == 8 ? reinterpret_cast<std::int8_t*>(payload) : levels_scratch(in.size());
    for (std::size_t b = 0; b < nb; ++b) {
      const auto bucket = in.subspan(b * config_.bucket, std::min(config_.bucket, in.size() - b * config_.bucket));
      const auto header = static_cast<float>(std::ldexp(local_norm(bucket, config_.norm), -kHeaderShift));
      std::memcpy(out.data() + b * sizeof(float), &header, sizeof(float));
      encode_levels(bucket, first + b * config_.bucket, q + b * config_.bucket,
                    std::ldexp(static_cast<double>(header), kHeaderShift), levels_, rng_);
    }
    if (config_.bits == 4) kernels::pack_i4(q, payload, in.size());
    return max_encoded_bytes(in.size());
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    require_chunk_bytes(name_, in.size(), max_encoded_bytes(out.size()), out.size());
    const std::size_t nb = buckets(out.size());
    const auto* payload = reinterpret_cast<const std::uint8_t*>(in.data() + nb * sizeof(float));
    const std::int8_t* q = reinterpret_cast<const std::int8_t*>(payload);
    if (config_.bits == 4) {
      std::int8_t* unpacked = levels_scratch(out.size());
      kernels::unpack_i4(payload, unpacked, out.size());
      q = unpacked;
    }
    for (std::size_t b = 0; b < nb; ++b) {
      float header;  // copied: a chunk may start at any byte of the collective's buffer
      std::memcpy(&header, in.data() + b * sizeof(float), sizeof(float));
      if (!std::isfinite(header) || header < 0) {
        throw CommError(name_ + ": bucket norm " + std::to_string(header) + " is invalid (corrupt message?)");
      }
      const std::size_t start = b * config_.bucket;
      decode_levels(q + start, out.data() + start, std::min(config_.bucket, out.size() - start),
                    std::ldexp(static_cast<double>(header), kHeaderShift) / levels_);
    }
  }

  // One rank's encoding decodes to its own Q(x) already.
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }


 private:
  static constexpr int kHeaderShift = 8;  // the header holds norm · 2^-8
  // 4-bit levels before packing / after unpacking, reused across calls.
  std::int8_t* levels_scratch(std::size_t count) {
    if (scratch_.size() < count) scratch_.resize(count);
    return scratch_.data();
  }
  std::size_t buckets(std::size_t count) const { return (count + config_.bucket - 1) / config_.bucket; }
  std::size_t payload_bytes(std::size_t count) const { return config_.bits == 8 ? count : (count + 1) / 2; }

  std::string name_;
  QsgdConfig config_;
  int levels_;
  CounterRng rng_;
  std::vector<std::int8_t> scratch_;
};

class QsgdCodec final : public Codec {
 public:
  QsgdCodec(QsgdConfig config, CodecSettings settings) : Codec(settings), config_(config) {}

  std::string spec() const override {
    return "qsgd:bits=" + std::to_string(config_.bits) + ",bucket=" + std::to_string(config_.bucket) +
           ",norm=" + std::string(to_string(config_.norm));
  }
  // Reduce-scatter blocks hold whole buckets, so each block's encoding is
  // the ranks' encoding of those buckets. The decode-and-sum path forms the
  // mean of the decoded values.
  CodecTraits traits() const override {
    return {.unbiased = true,
            .aggregation = Aggregation::allgather_decode,
            .norm_kind = config_.norm,
            .granularity = config_.bucket,
            .means_of_decoded_values = true,
            .host_means = true,
            .zero_stays_zero = true};
  }
  // Each rank errs by less than one level of a bucket norm, itself at most
  // the global norm of the same kind; so does their mean.
  CodecBounds bounds(const BoundsQuery& q) const override {
    const QsgdEncoding sizes(spec(), config_, CounterRng(0, 0, 0, 0, RngStream::quantize));
    return {sizes.max_encoded_bytes(q.count), q.inf_norm / levels(),
            variance(q.squared_norm, q.ranks)};
  }

 protected:
  // Every rank encodes its data with its own bucket norms; the encodings
  // reach the ranks that need them (an allgather, or for reduce-scatter a
  // direct exchange of blocks), which decode each and add them in rank order
  // — the same values in the same order everywhere — then divide by n. The
  // norm exchange only detects NaN/Inf on any rank.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    return std::make_unique<QsgdEncoding>(
        spec(), config_,
        CounterRng(settings().seed, setup.step, settings().bucket,
                   static_cast<std::uint64_t>(setup.rank), RngStream::quantize));
  }

 private:
  double levels() const { return (1 << (config_.bits - 1)) - 1; }
  // QSGD's Lemma 3.1 per bucket of B elements with its 2-norm:
  // E||Q(v) - v||^2 <= min(B/s^2, sqrt(B)/s) ||v||^2; the mean of n
  // independent ranks divides by n^2. (Stated for the 2-norm only.)
  std::optional<double> variance(double squared_norm, int ranks) const {
    if (config_.norm != NormKind::two) return std::nullopt;
    const double s = levels(), b = static_cast<double>(config_.bucket);
    return std::min(b / (s * s), std::sqrt(b) / s) * squared_norm / (static_cast<double>(ranks) * ranks);
  }

  QsgdConfig config_;
};

}  // namespace

std::unique_ptr<Codec> make_qsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  QsgdConfig config;
  config.bits = std::stoi(params.choice("bits", {"8", "4"}, "8"));
  config.bucket = static_cast<std::size_t>(
      std::stoul(params.choice("bucket", {"128", "256", "512", "1024", "2048", "4096"}, "512")));
  config.norm = params.choice("norm", {"2", "inf"}, "2") == "2" ? NormKind::two : NormKind::inf;
  params.finish();
  return std::make_unique<QsgdCodec>(config, settings);
}

}  // namespace qccl
