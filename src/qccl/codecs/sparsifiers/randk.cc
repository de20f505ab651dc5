#include "qccl/codecs/sparsifiers/randk.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "qccl/codecs/error_feedback.h"
#include "qccl/codecs/fp32_mean.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct RandkConfig {
  double ratio = 0.01;
  SelectionScope scope = SelectionScope::group;  // select=group|tensor
  bool unbiased = false;       // scale=unbiased: values times d_t/k_t
  bool error_feedback = true;  // ef=on
};

std::string randk_spec(const RandkConfig& config) {
  return "randk:ratio=" + format_number(config.ratio) + ",select=" +
         std::string(selection_scope_name(config.scope)) +
         ",scale=" + (config.unbiased ? "unbiased" : "none") +
         ",ef=" + (config.error_feedback ? "on" : "off");
}

// The values of the shared positions only: a chunk [first, first + count)
// is the fp32 values (times their tensor's factor) of the selected positions
// inside it, in increasing order — 4 bytes each, no indices, since every
// rank knows the positions. reduce() adds two such chunks element by
// element; decode() scatters a chunk into zeros. Values travel scaled when
// their sum could overflow fp32 (fp32_mean.h), and then decode to the mean.
class RandkReduction final : public Reduction {
 public:
  // `selected`: increasing positions in the collective's element space, the
  // same on every rank; `factors`: each one's factor (empty: all 1).
  RandkReduction(std::string name, std::vector<std::size_t> selected, std::vector<float> factors,
                 SumScaling scaling)
      : name_(std::move(name)), selected_(std::move(selected)), factors_(std::move(factors)),
        scaling_(scaling) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return sizeof(float) * std::min(count, selected_.size());
  }

  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override {
    const auto [lo, hi] = inside(first, in.size());
    auto* values = reinterpret_cast<float*>(out.data());
    for (std::size_t p = lo; p < hi; ++p) {
      const float x = in[selected_[p] - first];
      values[p - lo] = scaling_.encode(factors_.empty() ? x : x * factors_[p]);
    }
    return sizeof(float) * (hi - lo);
  }

  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    scatter(in, first, out, [&](float v) { return scaling_.active() ? scaling_.mean(v) : v; });
  }

  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    scatter(in, first, out, [&](float v) { return scaling_.contribution(v); });
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    const auto [lo, hi] = inside(context.first, context.count);
    const std::size_t bytes = sizeof(float) * (hi - lo);
    require_chunk_bytes(name_, incoming.size(), bytes, context.count);
    require_chunk_bytes(name_, accum_bytes, bytes, context.count);
    float* __restrict sum = reinterpret_cast<float*>(accum.data());
    const float* __restrict add = reinterpret_cast<const float*>(incoming.data());
    for (std::size_t i = 0; i < hi - lo; ++i) sum[i] += add[i];
    return bytes;
  }

 private:
  // out = zeros, and value(v) at the selected positions.
  template <class Value>
  void scatter(std::span<const std::byte> in, std::size_t first, std::span<float> out,
               Value&& value) const {
    const auto [lo, hi] = inside(first, out.size());
    require_chunk_bytes(name_, in.size(), sizeof(float) * (hi - lo), out.size());
    std::fill(out.begin(), out.end(), 0.0f);
    const auto* values = reinterpret_cast<const float*>(in.data());
    for (std::size_t p = lo; p < hi; ++p) out[selected_[p] - first] = value(values[p - lo]);
  }

  // The selected positions in [first, first + count), as indices into selected_.
  std::pair<std::size_t, std::size_t> inside(std::size_t first, std::size_t count) const {
    const auto lo = std::lower_bound(selected_.begin(), selected_.end(), first);
    const auto hi = std::lower_bound(lo, selected_.end(), first + count);
    return {static_cast<std::size_t>(lo - selected_.begin()),
            static_cast<std::size_t>(hi - selected_.begin())};
  }

  std::string name_;
  std::vector<std::size_t> selected_;
  std::vector<float> factors_;
  SumScaling scaling_;
};

// Rand-k without memory. Each step draws, in every slice of the data
// (selection_slices: with select=group, the default, the whole merged group
// as one tensor, as MergeComp §4.1 Algorithm 1 compresses a group; with
// select=tensor each tensor of the layout), k_t = max(1, ⌈ratio·d_t⌉)
// distinct positions uniformly (select_uniform, Floyd's algorithm) from the
// counter-based generator keyed by (seed, step, bucket, shard, slice) —
// never by the rank — so every rank draws the same positions and none are
// sent. The shard is 0 for the means; an allgather draws in each rank's
// shard with that shard's index, which every rank knows.
//
// scale=none sends C(x) = x on the positions (E[C(x)] = (k/d)·x, biased:
// meant for error feedback, Stich et al. 2018's memory SGD with rand-k);
// scale=unbiased sends C(x) = (d_t/k_t)·x there, E[C(x)] = x.
class RandkCodec final : public Codec {
 public:
  RandkCodec(RandkConfig config, CodecSettings settings) : Codec(settings), config_(config) {
    config_.error_feedback = false;
  }

  std::string spec() const override { return randk_spec(config_); }
  // The kept values are summed in transit, but only qccl's collectives
  // know which positions a chunk holds: no native equivalent.
  CodecTraits traits() const override { return {.unbiased = config_.unbiased}; }
  // Exactly 4·Σ_t k_t bytes for `count` elements (over the selection's
  // slices: one for select=group, or when the layout does not cover
  // `count`), however the vector is chunked.
  CodecBounds bounds(const BoundsQuery& q) const override {
    std::size_t kept = 0;
    for (const TensorSlice& t : slices(q.count)) {
      kept += sparse_count(config_.ratio, t.elements);
    }
    return {sizeof(float) * kept, abs_error(q.inf_norm, q.ranks),
            variance(q.squared_norm, q.count, q.ranks)};
  }

  // On a kept position the result is s·mean (s = d_t/k_t, or 1), off by
  // (s − 1)·|mean|; elsewhere it is 0, off by |mean|. Since
  // k_t >= ratio·d_t·(1 − 1e-12), s <= 1/ratio (to 1e-9). Rounding: each
  // value s·x, the n − 1 sums of values <= s·norm and the division, within
  // s·n·2^-23 of the norm.
  double abs_error(double norm, int ranks) const {
    const double s = config_.unbiased ? 1.0 / (config_.ratio * (1.0 - 1e-9)) : 1.0;
    return norm * (std::max(1.0, s - 1.0) + s * ranks * std::ldexp(1.0, -23));
  }

  // The unbiased variant, positions shared by the ranks. For one slice of d
  // elements, each kept with probability p = k/d and scaled by 1/p,
  // E||C(y) − y||² = Σ_j y_j² ((1/p − 1)²·p + (1 − p)) = (d/k − 1)·||y||².
  // The ranks use the same positions, so their errors are not independent:
  // the mean of C(x_i) is C(x̄) exactly (C is linear given the positions),
  // E||C(x̄) − x̄||² = Σ_t (d_t/k_t − 1)·||x̄_t||² — no 1/n from averaging —
  // and ||x̄||² <= (1/n)·Σ_i ||x_i||² gives the bound
  // (max_t d_t/k_t − 1)·squared_norm / n. (Equality when every rank's input
  // is the same and one tensor.)
  std::optional<double> variance(double squared_norm, std::size_t d, int ranks) const {
    if (!config_.unbiased) return std::nullopt;
    double largest = 1.0;
    for (const TensorSlice& t : slices(d)) {
      if (t.elements == 0) continue;
      largest = std::max(largest, static_cast<double>(t.elements) /
                                      static_cast<double>(sparse_count(config_.ratio, t.elements)));
    }
    return (largest - 1.0) * squared_norm / ranks;
  }

 protected:
  // The positions follow the step: ranks whose step counters differ would
  // add values of different positions, so the call check compares them.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    StepPreparation preparation = layout_preparation(setup);
    preparation.digest = " step " + std::to_string(setup.step) + preparation.digest;
    return preparation;
  }

  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    check_scaled_range(setup);
    decodes_to_mean_ = false;
    const double norm = setup.norm;
    if (norm == 0.0) return nullptr;  // every rank's input is zero, and so is the mean
    std::vector<std::size_t> selected;
    std::vector<float> factors;
    if (setup.operation == CodecOperation::allgather) {
      for (std::size_t q = 0; q < setup.pieces.size(); ++q) {
        select(setup, q, setup.pieces[q], selected, factors);
      }
    } else {
      select(setup, 0, Range{0, setup.input.size()}, selected, factors);
    }
    const float largest =
        factors.empty() ? 1.0f : *std::max_element(factors.begin(), factors.end());
    const SumScaling scaling = SumScaling::for_sum(largest * norm, setup.summed);
    decodes_to_mean_ = scaling.active();
    return std::make_unique<RandkReduction>(spec(), std::move(selected), std::move(factors),
                                            scaling);
  }

  // scale=unbiased sends (d_t/k_t)·x, which for x near fp32's largest value
  // fp32 cannot hold: refused on every rank before anything moves.
  void check_scaled_range(const StepSetup& setup) const {
    const double norm = setup.norm;
    if (!config_.unbiased) return;
    // Every shard's factors for an allgather, so that every rank decides alike.
    std::vector<std::size_t> lengths{setup.input.size()};
    if (setup.operation == CodecOperation::allgather) {
      lengths.clear();
      for (const Range& shard : setup.pieces) lengths.push_back(shard.count);
    }
    double largest = 1.0;
    for (std::size_t length : lengths) {
      for (const TensorSlice& t : slices(length)) {
        if (t.elements == 0) continue;
        const double factor = static_cast<double>(t.elements) /
                              static_cast<double>(sparse_count(config_.ratio, t.elements));
        largest = std::max(largest, static_cast<double>(static_cast<float>(factor)));
      }
    }
    if (largest * norm > FLT_MAX) {
      throw InvalidArgument(step_name() + ": scale=unbiased sends x·d/k, and the largest |x| " +
                            format_number(norm) + " times d/k = " + format_number(largest) +
                            " exceeds fp32's largest value (about 3.4e38); use scale=none "
                            "(with error feedback) or scale the gradients down");
    }
  }

  void complete_step(const StepSetup& setup, Encoding*, const Operation& operation) override {
    if (decodes_to_mean_) return;
    sum_to_mean(setup, operation);
  }

 private:
  // Where the positions are drawn, for data of `length` elements.
  std::vector<TensorSlice> slices(std::size_t length) const {
    return selection_slices(layout(), length, config_.scope);
  }

  // Appends shard `shard`'s positions (at `where` in the element space) and,
  // when scaling, their factors.
  void select(const StepSetup& setup, std::size_t shard, Range where,
              std::vector<std::size_t>& selected, std::vector<float>& factors) const {
    const auto tensors = slices(where.count);
    for (std::size_t l = 0; l < tensors.size(); ++l) {
      const TensorSlice& t = tensors[l];
      const std::size_t k = sparse_count(config_.ratio, t.elements);
      const CounterRng rng(settings().seed, setup.step, settings().bucket,
                           (static_cast<std::uint64_t>(shard) << 32) + l, RngStream::sparsify);
      select_uniform(rng, t.elements, k, where.first + t.offset, selected, bitmap_);
      if (config_.unbiased) {
        const auto factor =
            static_cast<float>(static_cast<double>(t.elements) / static_cast<double>(k));
        factors.resize(selected.size(), factor);
      }
    }
  }

  RandkConfig config_;
  bool decodes_to_mean_ = false;  // this step's values travel scaled and decode to the mean
  mutable std::vector<std::uint64_t> bitmap_;  // Floyd's membership, reused
};

}  // namespace

// The default is scale=none with error feedback: MergeComp takes Rand-k from
// Stich et al. 2018 (§2.1), whose rand-k is unscaled and runs with memory
// (error feedback), as MergeComp runs every sparsifier (§3.2: "many
// compression algorithms leverage error-feedback"). The unbiased scaling
// multiplies the variance by d/k − 1 (99 at MergeComp's 99% sparsity, §5),
// too much to train with; it is offered for the unbiasedness analysis.
std::unique_ptr<Codec> make_randk_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  RandkConfig config;
  config.ratio = read_sparse_ratio(params, "randk");
  config.scope = read_selection_scope(params);
  config.unbiased = params.choice("scale", {"none", "unbiased"}, "none") == "unbiased";
  config.error_feedback =
      params.choice("ef", {"on", "off"}, config.unbiased ? "off" : "on") == "on";
  params.finish();
  // Error feedback needs a contraction, E||C(x) − x||² <= (1 − δ)||x||²
  // (Stich et al. 2018's k-contraction); the scaled compressor's error is
  // (d/k − 1)||x||², larger than ||x||² once k < d/2, and its residual grows
  // without bound.
  if (config.unbiased && config.error_feedback) {
    throw InvalidArgument("codec randk: scale=unbiased with ef=on is refused: the scaled values "
                          "err by (d/k - 1)·||x||², more than error feedback can carry; use "
                          "scale=none,ef=on (Stich et al. 2018) or scale=unbiased,ef=off");
  }
  auto codec = std::make_unique<RandkCodec>(config, settings);
  if (!config.error_feedback) return codec;
  return make_error_feedback_codec(std::move(codec), randk_spec(config));
}

}  // namespace qccl
