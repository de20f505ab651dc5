#include "qccl/codecs/quantizers/terngrad.h"

#include <bit>
#include <cmath>
#include <optional>
#include <vector>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/quantizers/ternary_codes.h"
#include "qccl/collectives/small_allreduce.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct TernGradConfig {
  bool clip = false;
  TernaryWire wire = TernaryWire::int8_sums;
};

// Wen et al. 2017 (TernGrad, gradient clipping): c = 2.5 standard deviations.
constexpr double kClipFactor = 2.5;
constexpr int kMaxInt8Ranks = kTernaryInt8MaxRanks;

// TernGrad's gradient clipping (Wen et al. 2017, "gradient clipping"):
// each tensor's elements clamped to ±c·σ, σ the standard deviation of that
// tensor's elements (the paper clips layer by layer), which shrinks the
// tensor's shared scale s_t and with it the variance s_t·|x| − x² of
// ternarizing. It changes the values, so the codec is biased with it. σ is
// computed in double, in element order (the same bits on every call). A
// tensor with σ = 0 (constant, e.g. a scalar) is left as it is: clamping it
// to 0 would erase it; so is one with non-finite σ, whose NaN or Inf the
// step's norm exchange then reports.
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

// TernGrad (Wen et al. 2017, §3): each tensor t (layer) is ternarized on
// its own scale ("layer-wise ternarizing"), shared by all ranks ("scalar
// sharing"): s_t = max over ranks of ‖g_t‖_∞, so every rank's ternary
// values of tensor t are levels q ∈ {−1, 0, +1} of the same s_t and their
// sum over ranks is an integer — the compressed-domain sum of
// Global-QSGD's linear dithering with one level per rank (linear_dither.h;
// Global-QSGD §4.2), which rounds up with probability |x|/s_t exactly as
// TernGrad's Bernoulli b does. A small tensor thus keeps its own
// resolution instead of being rounded on the largest tensor's scale.
// Tensors: those of the layout for the means, each rank's shard for an
// allgather. With one tensor, s_t is the global ∞-norm the step's exchange
// already gave; with more, one more small exchange inside the step's call
// gives every s_t (exchange_scales). Two wires:
// - int8 (compressed domain): int8 partial sums hop by hop on ring or
//   halving-doubling, |Σq| <= n <= 127; one byte per element per hop, so an
//   allreduce sends 2(n−1)/n · d bytes per rank on the ring.
// - 2bit (allgather_decode): the paper's 2-bit codes, four per byte,
//   gathered whole (allreduce: (n−1) · d/4 bytes per rank, smaller than the
//   int8 ring below 8 ranks; reduce-scatter by direct exchange, (n−1)/n · d/4,
//   always 4x smaller than int8; allgather, d/4 per shard) and summed as
//   exact integers on every rank, for any number of ranks.
// Both wires compute the same levels from the same random numbers and give
// the mean as (Σq) · fl(s_t/n): bitwise the same results. The wire is a
// parameter, not chosen per step from n, because wire_bytes() and
// aggregation() must describe the codec whatever n is.
class TernGradCodec final : public Codec {
 public:
  TernGradCodec(TernGradConfig config, CodecSettings settings) : Codec(settings), config_(config) {}

  std::string spec() const override {
    return std::string("terngrad:clip=") + (config_.clip ? "2.5" : "off") +
           ",wire=" + (int8_wire() ? "int8" : "2bit");
  }
  // Unbiased unless clipped. One rank's encoding: a level per byte (int8)
  // or four per byte (2bit).
  CodecTraits traits() const override {
    return {.unbiased = !config_.clip,
            .aggregation = int8_wire() ? Aggregation::compressed_domain
                                       : Aggregation::allgather_decode,
            .granularity = int8_wire() ? std::size_t{1} : std::size_t{4}};
  }
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {int8_wire() ? q.count : (q.count + 3) / 4, abs_error(q.inf_norm, q.ranks),
            variance(q.squared_norm, q.count, q.ranks)};
  }

 protected:
  void run_operation(Communicator& comm, const Operation& operation,
                     const CollectiveOptions& options) override;

  // The scales' exchange has one entry per tensor of the layout: ranks
  // with different layouts fail the call check instead.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    if (int8_wire() && setup.summed > kMaxInt8Ranks) throw_too_many_ranks(setup.summed);
    if (!per_layer(setup)) return {};
    layout().check(setup.input.size(), step_name());
    return {layout_digest(setup)};
  }

  // On the global ∞-norm for every tensor, which is s_t itself when there
  // is one tensor; move_data sets the per-tensor scales otherwise. A zero
  // norm means every rank's input is zero: nothing moves.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    ternary_.reset();
    if (setup.norm == 0.0) return nullptr;
    if (int8_wire() && setup.summed > kMaxInt8Ranks) throw_too_many_ranks(setup.summed);
    const CounterRng rng(settings().seed, setup.step, settings().bucket,
                         static_cast<std::uint64_t>(setup.rank), RngStream::quantize);
    TernarySetup ternary;
    ternary.name = spec();
    ternary.wire = config_.wire;
    ternary.summed = setup.summed;
    ternary.integer_levels = setup.operation != CodecOperation::allgather;
    ternary.scales = TernaryScales::uniform(setup.norm);
    ternary_.emplace(std::move(ternary), rng);
    return ternary_->encoding();
  }

  void move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                 const Operation& operation, const CollectiveOptions& options) override {
    const bool shards = setup.operation == CodecOperation::allgather && setup.pieces.size() > 1;
    if (per_layer(setup) || shards) {
      ternary_->set_scales(exchange_scales(comm, tag, setup, operation, options));
    }
    default_move_data(comm, tag, setup, encoding, operation, options);
  }

  // 2bit means: the gathered levels were summed exactly (integers below
  // 2^24 in fp32); scaled once per tensor by fl(s_t/n), as the int8 decode
  // does.
  void complete_step(const StepSetup& setup, Encoding* encoding,
                     const Operation& operation) override {
    if (int8_wire() || encoding == nullptr || setup.operation == CodecOperation::allgather) return;
    const std::size_t first = setup.operation == CodecOperation::reduce_scatter_mean
                                  ? setup.pieces[static_cast<std::size_t>(setup.rank)].first
                                  : 0;
    scale_level_sums(ternary_->scales(), first, operation.output, setup.summed);
  }

 private:
  bool int8_wire() const { return config_.wire == TernaryWire::int8_sums; }
  // A mean over a vector of several tensors: one scale per tensor.
  bool per_layer(const StepSetup& setup) const {
    return setup.operation != CodecOperation::allgather && layout().tensor_count() > 1;
  }

  TernaryScales exchange_scales(Communicator& comm, int tag, const StepSetup& setup,
                                const Operation& operation, const CollectiveOptions& options) const;

  [[noreturn]] void throw_too_many_ranks(int ranks) const {
    throw InvalidArgument(spec() + ": a mean over " + std::to_string(ranks) +
                          " ranks does not fit the int8 partial sums (at most " +
                          std::to_string(kMaxInt8Ranks) + " ranks); use wire=2bit");
  }

  // Each rank's value is 0 or s_t with the sign of x, where |x| <= s_t <= M,
  // the inputs' ∞-norm (clipping keeps signs and only shrinks magnitudes),
  // so it errs by at most max(|x|, s_t − |x|) <= M per element, and so does
  // the mean; decoding k · fl(s_t/n) in fp32 adds at most 2^-22 · s_t
  // (plus n · 2^-149 should s_t/n be subnormal).
  static double abs_error(double norm, int ranks) { return norm * (1 + 0x1p-22) + ranks * 0x1p-149; }
  std::optional<double> variance(double squared_norm, std::size_t d, int ranks) const;

  TernGradConfig config_;
  std::vector<float> clipped_;  // clip=2.5: the clipped input, reused by every step
  std::optional<TernaryStep> ternary_;  // this step's levels, from step_encoding
};

// TernGrad's scalar sharing (Wen et al. 2017, §3) per tensor: each rank's
// max|x| of every tensor (of its own shard, for an allgather: the others'
// entries 0), as the bits of a non-negative float, which order as the
// floats do; one MAX allreduce of those integers on the step's tag gives
// every rank the same exact s_t. Their largest must be the global norm of
// the step's exchange, computed from the same (clipped) input.
TernaryScales TernGradCodec::exchange_scales(Communicator& comm, int tag, const StepSetup& setup,
                                             const Operation& operation,
                                             const CollectiveOptions& options) const {
  const std::span<const float> input = operation.input;
  TernaryScales scales{{}, {}};
  std::vector<std::int64_t> largest;
  if (setup.operation == CodecOperation::allgather) {
    for (const Range& shard : setup.pieces) scales.bounds.push_back(shard.first);
    scales.bounds.push_back(setup.pieces.back().end());
    largest.assign(setup.pieces.size(), 0);
    largest[static_cast<std::size_t>(setup.rank)] =
        kernels::max_abs_bits(input.data(), input.size());
  } else {
    for (const TensorSlice& t : layout().tensors(input.size())) {
      scales.bounds.push_back(t.offset);
      largest.push_back(kernels::max_abs_bits(input.data() + t.offset, t.elements));
    }
    scales.bounds.push_back(input.size());
  }
  small_allreduce(comm, tag, largest, ReduceOp::max, comm.timeout(options.timeout),
                  spec() + " tensor scales");
  bool valid = true;
  double norm = 0;
  for (std::int64_t bits : largest) {
    valid = valid && bits >= 0 && bits < 0x7F800000;  // a finite magnitude
    const auto s = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    scales.scales.push_back(valid ? s : 0.0);
    norm = std::max(norm, static_cast<double>(scales.scales.back()));
  }
  if (!valid || norm != setup.norm) {
    throw CommError(step_name() + ": the tensors' scales exchanged do not match the global norm " +
                    std::to_string(setup.norm) + " (corrupt message?)");
  }
  return scales;
}

// Clipping (clip=2.5): on a copy of the input (a buffer of the codec's), per tensor of the layout for
// the means (the whole vector when it has no layout), per shard for an
// allgather; the step then runs on the clipped values, its exchanges
// included, so each s_t is the largest clipped magnitude of tensor t.
void TernGradCodec::run_operation(Communicator& comm, const Operation& operation,
                                  const CollectiveOptions& options) {
  if (!config_.clip) {
    Codec::run_operation(comm, operation, options);
    return;
  }
  std::vector<float>& clipped = clipped_;
  clipped.assign(operation.input.begin(), operation.input.end());
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
// ranks, S = Σ_i ‖x_i‖²). Per element of tensor t the ternary value
// c ∈ {0, ±s_t} has variance |x|(s_t − |x|), independent across ranks, so
// in exact arithmetic E‖mean − x̄‖² = (1/n²) Σ_t Σ_{x in t} |x|(s_t − |x|).
// (Wen et al. 2017 bound the second moment per rank by s‖x‖₁, i.e. this
// sum by s‖x‖₁ − ‖x‖², which needs s and ‖x‖₁.) Take one tensor, with
// N_t elements over all ranks, squared sum S_t and s_t its largest |x|:
// over its N_t − 1 other elements Σ|x| <= √((N_t−1)Q), Q their squared
// sum, so with q = √Q / s_t, Σ|x|(s_t − |x|)/S_t <= (√(N_t−1) q − q²)/(1 + q²),
// whose largest value over q is (√N_t − 1)/2, reached by N_t − 1 equal
// elements. Summed over tensors with N_t <= N (so per-tensor scales never
// exceed the bound of one scale for the whole vector, which they reach
// with one tensor):
//   E‖mean − x̄‖² <= S (√N − 1) / (2 n²).
// fp32 adds two terms, so that the bound holds for any input: the round-up
// probability is |x|·fl(1/s_t) rounded up to a multiple of 2^-24, off by at
// most ε = 2^-21 (a per-element bias <= s_t·ε, variance <= s_t²ε more, with
// s_t² <= S); and decoding k · fl(s_t/n) errs by <= 2^-22 s_t + n·2^-149
// (Minkowski adds the two in the root). Clipped, the result is biased: no
// bound in these terms.
std::optional<double> TernGradCodec::variance(double squared_norm, std::size_t d,
                                              int ranks) const {
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

std::unique_ptr<Codec> make_terngrad_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  TernGradConfig config;
  config.clip = params.choice("clip", {"off", "2.5"}, "off") == "2.5";
  config.wire = params.choice("wire", {"int8", "2bit"}, "int8") == "int8" ? TernaryWire::int8_sums
                                                                          : TernaryWire::codes;
  params.finish();
  return std::make_unique<TernGradCodec>(config, settings);
}

}  // namespace qccl
