#include "qccl/codecs/quantizers/natural.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// One rank's codes of exponential dithering (exp_dither.h) with headroom
// c = 1: code e in [1, 127] stands for 2^(1−e) of the reference, 0 for zero.
constexpr int kHeadroom = 1;
constexpr int kMaxLevels = exp_dither::levels(kHeadroom);  // 127
// 2^127, the largest power of two fp32 holds.
constexpr int kLargestReference = 127;
// 2^-149, the smallest positive fp32.
constexpr int kSmallestExponent = -149;

// ρ with 2^ρ the smallest power of two >= `norm` (> 0): no element exceeds
// it, so rounding up never leaves the window.
int reference_exponent(double norm) {
  int k = 0;
  const double fraction = std::frexp(norm, &k);  // norm = fraction · 2^k, fraction in [0.5, 1)
  return fraction == 0.5 ? k - 1 : k;
}

// Powers 2^(ρ−j) for j < levels: 127 of them, fewer where they would fall
// below fp32's smallest 2^-149 (the decoded values must be exact).
int window_levels(int rho) { return std::min(kMaxLevels, rho - kSmallestExponent + 1); }

// C_nat on one byte per element (Horváth et al. 2019, C_nat's definition:
// |x| in [2^e, 2^(e+1)) becomes 2^(e+1) with probability (|x| − 2^e)/2^e,
// else 2^e, sign kept), the exponent relative to the reference power 2^ρ
// every rank knows. y = |x|/2^ρ is exact (a power-of-two scaling), so
// exponential dithering's quantizer (exp_dither::quantize, vectorised in
// kernels::exp_encode) — which rounds y in [2^E, 2^(E+1)) up with
// probability equal to its mantissa fraction, 23 random bits against the 23
// mantissa bits — is C_nat exactly. Below the window's smallest power L =
// 2^(ρ−levels+1) it rounds to L with probability |x|/L, else to 0. Codes
// of one rank cannot be summed as codes without rounding again, so this is
// an Encoding, not a Reduction: the codes are gathered and decoded.
class NaturalCodesEncoding final : public Encoding {
 public:
  NaturalCodesEncoding(std::string name, int rho, CounterRng rng)
      : name_(std::move(name)), reference_(std::ldexp(1.0f, rho)), levels_(window_levels(rho)),
        rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    kernels::exp_encode(in.data(), reinterpret_cast<std::uint8_t*>(out.data()), in.size(),
                        reference_, kHeadroom, levels_, rng_.key_low(), rng_.key_high(), first);
    return in.size();
  }

  // sign · 2^(ρ+1−e), exact in fp32.
  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in, out.size());
    kernels::exp_decode(reinterpret_cast<const std::uint8_t*>(in.data()), out.data(), out.size(),
                        kHeadroom, reference_);
  }

  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }

 private:
  // The chunk's size, and every code: zero is 0x00 only, an exponent lies in
  // the window [1, levels].
  void check(std::span<const std::byte> in, std::size_t count) const {
    require_chunk_bytes(name_, in.size(), count, count);
    const auto* codes = reinterpret_cast<const std::uint8_t*>(in.data());
    for (std::size_t i = 0; i < count; ++i) {
      const int e = exp_dither::exponent(codes[i]);
      if (e == 0 ? codes[i] != 0 : e > levels_) {
        throw CommError(name_ + ": code " + std::to_string(codes[i]) + " at element " +
                        std::to_string(i) + " of a chunk is outside the window of " +
                        std::to_string(levels_) + " powers (corrupt message?)");
      }
    }
  }

  std::string name_;
  float reference_;
  int levels_;
  CounterRng rng_;
};

// Natural compression (Horváth et al. 2019) as a codec: each rank applies
// C_nat to its own values with a reference exponent from the step's norm
// exchange (the smallest power of two >= the global ∞-norm), every encoding
// reaches the ranks that need it, and each decodes them and adds them in
// rank order (the QSGD baseline's allgather_decode path), then divides by n.
//
// Global-QSGD's exponential dithering (dither=exp) is the same rounding
// rule on y = |x|/M with M the norm itself, so its values are powers of two
// times M, not powers of two; it pre-scales by 2^-c and re-rounds every
// partial sum with C_nat in transit (its Algorithm 2), adding variance at
// each hop. Here the values are C_nat(x) itself, ω = 1/8 per rank, and the
// sum over ranks is the exact sum of the decoded values (up to fp32
// addition), at the allgather's cost of (n−1)·d bytes per rank.
class NaturalCodec final : public Codec {
 public:
  explicit NaturalCodec(CodecSettings settings) : Codec(settings) {}

  std::string spec() const override { return "natural"; }
  CodecTraits traits() const override {
    return {.unbiased = true,
            .aggregation = Aggregation::allgather_decode,
            .means_of_decoded_values = true,  // the decode-and-sum path forms the mean
            .host_means = true,
            .zero_stays_zero = true};
  }
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {q.count, abs_error(q.inf_norm, q.ranks), variance(q.squared_norm, q.count, q.ranks)};
  }

 protected:
  // A zero norm means every rank's input is zero: nothing moves. C_nat may
  // round the largest magnitude up to 2^ρ; beyond 2^127 that is 2^128,
  // which fp32 cannot hold: refused on every rank alike.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    if (setup.norm > std::ldexp(1.0, kLargestReference)) {
      throw InvalidArgument(spec() + ": the inputs' largest magnitude " +
                            std::to_string(setup.norm) +
                            " exceeds 2^127; rounding it up to a power of two would overflow fp32");
    }
    if (setup.norm == 0.0) return nullptr;
    return std::make_unique<NaturalCodesEncoding>(
        spec(), reference_exponent(setup.norm),
        CounterRng(settings().seed, setup.step, settings().bucket,
                   static_cast<std::uint64_t>(setup.rank), RngStream::quantize));
  }

 private:
  // Per rank |C(x) − x| < 2^e <= R/2 in the window (R = 2^ρ), at most L <=
  // R/2 below it, so the mean errs by at most R/2. The fp32 sum of n
  // decoded values (each <= R) in rank order and the division by n add at
  // most n·2^-23·R + 2^-149.
  static double abs_error(double norm, int ranks) {
    if (norm == 0) return 0x1p-149;
    if (norm > std::ldexp(1.0, kLargestReference)) return std::numeric_limits<double>::infinity();
    const double reference = std::ldexp(1.0, reference_exponent(norm));
    return reference / 2 + ranks * 0x1p-23 * reference + 0x1p-149;
  }
  static double variance(double squared_norm, std::size_t d, int ranks);
};

// E‖result − x̄‖² for any inputs x_1..x_n (S = Σ_i ‖x_i‖², M = the ∞-norm,
// so M² <= S). In the window (|x| >= L), C_nat is unbiased with
// E(C(x) − x)² = (|x| − 2^e)(2^(e+1) − |x|) <= x²/8 (Horváth et al. 2019,
// ω = 1/8; the ratio peaks at |x| = (4/3)·2^e). Below it (0 < |x| < L) the
// variance is |x|(L − |x|) <= L²/4, not <= x²/8, and the round-up
// probability, a multiple of 2^-23, is off by <= 2^-24 (bias <= 2^-24 L);
// L = 2^(ρ−126) < 2^-125 M there (where the window is cut at 2^-149, no
// non-zero fp32 lies below it). Ranks round independently, so
//   E‖mean of C(x_i) − x̄‖² <= S/(8n²) + d·2^-251·S,
// which is S/(8n²), ω/n of the paper, whenever no non-zero element is
// smaller than L (every input, when M < 2^-23). The fp32 sum in rank order
// and the division by n err per element by <= n·2^-23·Σ_i|C(x_i)|/n +
// 2^-149, with E Σ_i ‖C(x_i)‖² <= (9/8 + n·d·2^-250)·S; Minkowski adds its
// root to the root of the bound above.
double NaturalCodec::variance(double squared_norm, std::size_t d, int ranks) {
  const double n = ranks, dims = static_cast<double>(d), s2 = squared_norm;
  const double variance = s2 / (8 * n * n) + dims * 0x1p-251 * s2;
  const double moment = (9.0 / 8 + n * dims * 0x1p-250) * s2;
  const double rounding = n * 0x1p-23 * std::sqrt(moment / n) + std::sqrt(dims) * 0x1p-149;
  const double root = std::sqrt(variance) + rounding;
  return root * root;
}

}  // namespace

std::unique_ptr<Codec> make_natural_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  params.finish();
  return std::make_unique<NaturalCodec>(settings);
}

}  // namespace qccl
