#include "qccl/codecs/terngrad.h"

#include <cmath>
#include <vector>

#include "qccl/codecs/linear_dither.h"
#include "qccl/codecs/ternary_codes.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

enum class TernaryWire {
  int8_sums,  // partial sums of levels in transit, one int8 per element per hop
  codes,      // 2-bit codes gathered, levels summed after decoding
};

struct TernGradConfig {
  bool clip = false;
  TernaryWire wire = TernaryWire::int8_sums;
};

// Wen et al. 2017 (TernGrad, gradient clipping): c = 2.5 standard deviations.
constexpr double kClipFactor = 2.5;
// The largest sum of ±1 levels over ranks an int8 holds.
constexpr int kMaxInt8Ranks = 127;

// TernGrad's gradient clipping (Wen et al. 2017, "gradient clipping"):
// each tensor's elements clamped to ±c·σ, σ the standard deviation of that
// tensor's elements (the paper clips layer by layer), which shrinks the
// shared scale s and with it the variance s·|x| − x² of ternarizing. It
// changes the values, so the codec is biased with it. σ is computed in
// double, in element order (the same bits on every call). A tensor with
// σ = 0 (constant, e.g. a scalar) is left as it is: clamping it to 0 would
// erase it; so is one with non-finite σ, whose NaN or Inf the step's norm
// exchange then reports.
void clip_to_deviation(std::span<float> x, double factor) {
  if (x.empty()) return;
  const auto count = static_cast<double>(x.size());
  double sum = 0;
  for (float v : x) sum += v;
  const double mean = sum / count;
  double squares = 0;
  for (float v : x) squares += (v - mean) * (v - mean);
  const auto bound = static_cast<float>(factor * std::sqrt(squares / count));
  if (!(bound > 0.0f) || !std::isfinite(bound)) return;
  for (float& v : x) v = std::min(std::max(v, -bound), bound);
}

// TernGrad (Wen et al. 2017, the ternarizing rule) with the shared scale of
// its "scalar sharing": s = max over ranks of ‖g_i‖_∞, which the step's
// norm exchange already provides, so every rank's ternary values are levels
// q ∈ {−1, 0, +1} of the same s and their sum over ranks is an integer —
// the compressed-domain sum of Global-QSGD's linear dithering with one
// level per rank (linear_dither.h; Global-QSGD §4.2), which rounds up with
// probability |x|/s exactly as TernGrad's Bernoulli b does. Two wires:
// - int8 (compressed domain): int8 partial sums hop by hop on ring or
//   halving-doubling, |Σq| <= n <= 127; one byte per element per hop, so an
//   allreduce sends 2(n−1)/n · d bytes per rank on the ring.
// - 2bit (allgather_decode): the paper's 2-bit codes, four per byte,
//   gathered whole (allreduce: (n−1) · d/4 bytes per rank, smaller than the
//   int8 ring below 8 ranks; reduce-scatter by direct exchange, (n−1)/n · d/4,
//   always 4x smaller than int8; allgather, d/4 per shard) and summed as
//   exact integers on every rank, for any number of ranks.
// Both wires compute the same levels from the same random numbers and give
// the mean as (Σq) · fl(s/n): bitwise the same results. The wire is a
// parameter, not chosen per step from n, because wire_bytes() and
// aggregation() must describe the codec whatever n is.
class TernGradCodec final : public Codec {
 public:
  TernGradCodec(TernGradConfig config, CodecSettings settings) : Codec(settings), config_(config) {}

  std::string spec() const override {
    return std::string("terngrad:clip=") + (config_.clip ? "2.5" : "off") +
           ",wire=" + (int8_wire() ? "int8" : "2bit");
  }
  // Unbiased unless clipped.
  bool unbiased() const override { return !config_.clip; }
  Aggregation aggregation() const override {
    return int8_wire() ? Aggregation::compressed_domain : Aggregation::allgather_decode;
  }
  // One rank's encoding: a level per byte (int8) or four per byte (2bit).
  std::size_t wire_bytes(std::size_t count) const override {
    return int8_wire() ? count : (count + 3) / 4;
  }
  bool supports(CodecOperation) const override { return true; }
  std::size_t granularity() const override { return int8_wire() ? 1 : 4; }

  // Each rank's value is 0 or s with the sign of x (clipping keeps signs and
  // s <= the inputs' ∞-norm M), so it errs by at most M per element, and
  // so does the mean; decoding k · fl(s/n) in fp32 adds at most 2^-22 · s
  // (plus n · 2^-149 should s/n be subnormal).
  double max_abs_error(double norm, int ranks, Algorithm) const override {
    return norm * (1 + 0x1p-22) + ranks * 0x1p-149;
  }

  std::optional<double> variance_bound(double squared_norm, std::size_t d, int ranks,
                                       Algorithm) const override;

 protected:
  void run_operation(Communicator& comm, const Operation& operation,
                     const CollectiveOptions& options) override;

  void check_step(const StepSetup& setup) const override {
    if (int8_wire() && setup.summed > kMaxInt8Ranks) throw_too_many_ranks(setup.summed);
  }

  // A zero scale means every rank's input is zero: nothing moves.
  std::unique_ptr<Reduction> step_reduction(const StepSetup& setup, double norm) const override {
    if (norm == 0.0) return nullptr;
    const CounterRng rng(settings().seed, setup.step, settings().bucket,
                         static_cast<std::uint64_t>(setup.rank), RngStream::quantize);
    if (int8_wire()) {
      if (setup.summed > kMaxInt8Ranks) throw_too_many_ranks(setup.summed);
      return make_linear_sum_reduction(spec(), norm, 1, setup.summed, rng);
    }
    const bool shards = setup.operation == CodecOperation::allgather;
    return make_ternary_codes_reduction(spec(), norm, shards ? static_cast<float>(norm) : 1.0f, rng);
  }

  // 2bit means: the gathered levels were summed exactly (integers below
  // 2^24 in fp32); scaled once by fl(s/n), as the int8 decode does.
  void complete_step(const StepSetup& setup, Reduction* reduction,
                     const Operation& operation) override {
    if (int8_wire() || reduction == nullptr || setup.operation == CodecOperation::allgather) return;
    const auto step = static_cast<float>(setup.norm / (1.0 * setup.summed));
    for (float& x : operation.output) x = x * step;
  }

 private:
  bool int8_wire() const { return config_.wire == TernaryWire::int8_sums; }

  [[noreturn]] void throw_too_many_ranks(int ranks) const {
    throw InvalidArgument(spec() + ": a mean over " + std::to_string(ranks) +
                          " ranks does not fit the int8 partial sums (at most " +
                          std::to_string(kMaxInt8Ranks) + " ranks); use wire=2bit");
  }

  TernGradConfig config_;
};

// Clipping (clip=2.5): on a copy of the input, per tensor of the layout for
// the means (the whole vector when it has no layout), per shard for an
// allgather; the step then runs on the clipped values, its norm exchange
// included, so s is the largest clipped magnitude.
void TernGradCodec::run_operation(Communicator& comm, const Operation& operation,
                                  const CollectiveOptions& options) {
  if (!config_.clip) {
    Codec::run_operation(comm, operation, options);
    return;
  }
  std::vector<float> clipped(operation.input.begin(), operation.input.end());
  if (operation.kind == CodecOperation::allgather) {
    clip_to_deviation(clipped, kClipFactor);
  } else {
    layout().check(clipped.size(), step_name());
    for (const TensorSlice& t : layout().tensors(clipped.size())) {
      clip_to_deviation(std::span<float>(clipped).subspan(t.offset, t.elements), kClipFactor);
    }
  }
  Operation on_clipped = operation;
  on_clipped.input = clipped;
  Codec::run_operation(comm, on_clipped, options);
}

// E‖result − mean‖² for any inputs x_1..x_n (N = n·d elements over all
// ranks, S = Σ_i ‖x_i‖², s = max |x| <= √S). Per element the ternary value
// c ∈ {0, ±s} has variance |x|(s − |x|), independent across ranks, so in
// exact arithmetic E‖mean − x̄‖² = (1/n²) Σ |x|(s − |x|). (Wen et al. 2017
// bound the second moment per rank by s‖x‖₁, i.e. this sum by s‖x‖₁ − ‖x‖²,
// which needs s and ‖x‖₁.) Over the N − 1 elements other than the largest,
// Σ|x| <= √((N−1)Q) with Q their squared sum, so with q = √Q / s:
// Σ|x|(s − |x|)/S <= (√(N−1) q − q²)/(1 + q²), whose largest value over q
// is (√N − 1)/2, reached by N − 1 equal elements; so, tight:
//   E‖mean − x̄‖² <= S (√N − 1) / (2 n²).
// fp32 adds two terms, so that the bound holds for any input: the round-up
// probability is |x|·fl(1/s) rounded up to a multiple of 2^-24, off by at
// most ε = 2^-21 (a per-element bias <= s·ε, variance <= s²ε more); and
// decoding k · fl(s/n) errs by <= 2^-22 s + n·2^-149 (Minkowski adds the
// two in the root). Clipped, the result is biased: no bound in these terms.
std::optional<double> TernGradCodec::variance_bound(double squared_norm, std::size_t d, int ranks,
                                                    Algorithm) const {
  if (config_.clip) return std::nullopt;
  constexpr double kProbability = 0x1p-21;
  constexpr double kDecode = 0x1p-22;
  const double n = ranks, dims = static_cast<double>(d), total = n * dims;
  if (total == 0) return 0.0;
  const double spread = squared_norm * (std::sqrt(total) - 1) / 2;
  const double variance = (spread + total * squared_norm * kProbability) / (n * n) +
                          dims * squared_norm * kProbability * kProbability;
  const double rounding = std::sqrt(dims) * (kDecode * std::sqrt(squared_norm) + n * 0x1p-149);
  const double root = std::sqrt(variance) + rounding;
  return root * root;
}

}  // namespace

std::unique_ptr<Codec> make_terngrad_codec(const CodecSpec& spec, CodecSettings settings) {
  CodecParams params(spec);
  TernGradConfig config;
  config.clip = params.choice("clip", {"off", "2.5"}, "off") == "2.5";
  config.wire = params.choice("wire", {"int8", "2bit"}, "int8") == "int8" ? TernaryWire::int8_sums
                                                                          : TernaryWire::codes;
  params.finish();
  return std::make_unique<TernGradCodec>(config, settings);
}

}  // namespace qccl
