#include "qccl/codecs/sparsifiers/dgc.h"

#include <cmath>
#include <vector>

#include "qccl/codecs/sparsifiers/dgc_selection.h"
#include "qccl/codecs/sparsifiers/sparse_pairs.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

constexpr std::string_view kMomentumField = "dgc.momentum";        // u
constexpr std::string_view kAccumulatedField = "dgc.accumulated";  // v

struct DgcConfig {
  double ratio = 0.01;       // final density (MergeComp §5: 99% sparsity)
  double momentum = 0.9;     // m
  double clip = 0;           // local clipping threshold; 0: off
  std::uint64_t warmup = 0;  // steps of sparsity warm-up; 0: none
  double sample = 0.01;      // fraction sampled for the threshold (DGC: 0.1% to 1%)
  SelectionScope scope = SelectionScope::group;  // where the threshold selects
};

std::string dgc_spec(const DgcConfig& c) {
  return "dgc:ratio=" + format_number(c.ratio) + ",select=" +
         std::string(selection_scope_name(c.scope)) + ",momentum=" + format_number(c.momentum) +
         ",clip=" + (c.clip > 0 ? format_number(c.clip) : std::string("off")) +
         ",warmup=" + std::to_string(c.warmup) + ",sample=" + format_number(c.sample);
}

// One DGC step (Lin et al. 2018, gradient sparsification with the paper's
// four techniques), tensor by tensor (the paper's layers), on this rank's
// gradient g:
//   g ← g·min(1, (C/√N)/||g||₂)   local gradient clipping, when clip=C
//   u ← m·u + g                    momentum correction
//   v ← v + u                      local accumulation
//   sent = v on the positions select_by_threshold picks (dgc_selection.h),
//          at this step's density (warm-up training), in the whole merged
//          group (select=group: MergeComp §4.1 Algorithm 1 compresses a
//          group as one tensor) or in each tensor (select=tensor)
//   u, v ← 0 on the sent positions momentum factor masking
// The sent values travel as (index, value) pairs by allgather
// (SparsePairsEncoding), and every rank adds the ranks' pairs in rank order
// and divides by n: the result is the mean of the ranks' sent v, which the
// optimizer applies without momentum of its own.
//
// u and v are kept per tensor by name in the state store (checkpointed),
// whatever the selection's scope, so they follow a tensor into a new group.
// run_operation() computes the new u and v into scratch before the step's
// exchange, which checks v instead of g: an accumulated v beyond fp32's
// range (gradients near fp32's largest value, added up over steps) raises
// a NonFiniteError naming it on every rank before anything moves.
// step_encoding() selects from v (so building a step's encoding times the whole
// selection); complete_step() masks u and v and stores them, so a step
// that fails before it completes leaves the state as it was.
//
// The clipping threshold applies to each tensor's own gradient (the codec
// sees one bucket; a per-tensor clip does not depend on how tensors are
// bucketed), scaled by N^-1/2 for N ranks, as the paper's local gradient
// clipping does.
class DgcCodec final : public Codec {
 public:
  DgcCodec(DgcConfig config, CodecSettings settings) : Codec(settings), config_(config) {}

  std::string spec() const override { return dgc_spec(config_); }
  // The momentum is of a mean's input: no allgather. The decode-and-sum
  // path forms the mean of the ranks' sent values.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .aggregation = Aggregation::allgather_decode,
            .operations = CodecOperations::means_only(),
            .means_of_decoded_values = true};
  }
  // The most one rank sends for `count` elements at the current step's
  // density, in one chunk: a 4-byte count and Σ_t max(k_t, ⌊1.3·k_t⌋) pairs
  // (the threshold's count is allowed 30% above target; a converged step
  // sends 0.7·k_t to 1.3·k_t). Warm-up steps send more than later ones; a
  // collective that cuts the vector into c chunks adds 4·(c − 1) bytes.
  // The result carries the accumulated past, not this step's input: no
  // error bound.
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {.wire_bytes = sparse_pairs_bytes(most_selected(q.count, step()))};
  }

 protected:
  // Every rank reserves room for the most any rank sends at the step's
  // density, so under warm-up the ranks must agree on it.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    StepPreparation preparation = layout_preparation(setup);
    if (config_.warmup > 0) {
      preparation.digest = " density " +
                           format_number(dgc_density(config_.ratio, config_.warmup, setup.step)) +
                           preparation.digest;
    }
    return preparation;
  }

  // This step's u and v from the gradient; then the step on v.
  void run_operation(Communicator& comm, const Operation& operation,
                     const CollectiveOptions& options) override {
    layout().check(operation.input.size(), step_name());
    const std::size_t d = operation.input.size();
    momentum_.resize(d);
    accumulated_.resize(d);
    for (const TensorSlice& t : selection_tensors(layout(), d)) {
      accumulate(operation.input, comm.size(), t);
    }
    Operation sent = operation;
    sent.input = accumulated_;
    try {
      Codec::run_operation(comm, sent, options);
    } catch (const NonFiniteError& e) {
      throw NonFiniteError(step_name() + ": the accumulated gradient v = v + (m·u + g), kept "
                           "across steps, is not finite: its sum of gradients near fp32's largest "
                           "value (about 3.4e38) overflows fp32, or the gradient holds NaN or "
                           "Inf; the codec's state is unchanged. Scale the loss or the gradients "
                           "down. (" + std::string(e.what()) + ")");
    }
  }

  // Selects from the step's input, which is v (run_operation); a tool's
  // encoding_for() selects from the input it gives, as a first step would.
  // Never null: v can be non-zero when every rank's gradient is zero.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    const std::size_t d = setup.input.size();
    selected_.clear();
    const double density = dgc_density(config_.ratio, config_.warmup, setup.step);
    const auto slices = selection_slices(layout(), d, config_.scope);
    for (std::size_t l = 0; l < slices.size(); ++l) {
      const TensorSlice& t = slices[l];
      const CounterRng rng(settings().seed, setup.step, settings().bucket,
                           (static_cast<std::uint64_t>(setup.rank) << 32) + l,
                           RngStream::sparsify);
      select_by_threshold(setup.input.subspan(t.offset, t.elements),
                          sparse_count(density, t.elements), config_.sample, rng, t.offset,
                          selected_, sample_scratch_, magnitude_scratch_);
    }
    return std::make_unique<SparsePairsEncoding>(spec(), selected_, most_selected(d, setup.step));
  }

  void complete_step(const StepSetup& setup, Encoding*, const Operation&) override {
    for (std::size_t j : selected_) {
      momentum_[j] = 0.0f;
      accumulated_[j] = 0.0f;
    }
    for (const TensorSlice& t : selection_tensors(layout(), setup.input.size())) {
      const auto u = state_store().floats(t.name, kMomentumField, t.elements);
      const auto v = state_store().floats(t.name, kAccumulatedField, t.elements);
      std::copy_n(momentum_.begin() + static_cast<std::ptrdiff_t>(t.offset), t.elements, u.begin());
      std::copy_n(accumulated_.begin() + static_cast<std::ptrdiff_t>(t.offset), t.elements,
                  v.begin());
    }
  }

 private:
  // The stored field of tensor t, or empty (all zero) before its first step.
  std::span<const float> stored(const TensorSlice& t, std::string_view field) const {
    if (!state_store().contains(t.name, field)) return {};
    return state_store().floats(t.name, field, t.elements);
  }

  // momentum_ and accumulated_ of tensor t from this step's gradient.
  void accumulate(std::span<const float> gradient, int ranks, const TensorSlice& t) {
    const float* __restrict g = gradient.data() + t.offset;
    const auto u_old = stored(t, kMomentumField);
    const auto v_old = stored(t, kAccumulatedField);
    const float clip = clip_factor(gradient.subspan(t.offset, t.elements), ranks);
    const auto m = static_cast<float>(config_.momentum);
    float* __restrict u = momentum_.data() + t.offset;
    float* __restrict v = accumulated_.data() + t.offset;
    for (std::size_t j = 0; j < t.elements; ++j) {
      const float gradient = clip == 1.0f ? g[j] : g[j] * clip;
      u[j] = (u_old.empty() ? 0.0f : m * u_old[j]) + gradient;
      v[j] = (v_old.empty() ? 0.0f : v_old[j]) + u[j];
    }
  }

  // Local gradient clipping: the factor that brings ||g||₂ down to C/√N, or 1.
  float clip_factor(std::span<const float> g, int ranks) const {
    if (config_.clip <= 0) return 1.0f;
    double squares = 0;
    for (float x : g) squares += static_cast<double>(x) * x;
    const double limit = config_.clip / std::sqrt(static_cast<double>(ranks));
    const double norm = std::sqrt(squares);
    return norm > limit ? static_cast<float>(limit / norm) : 1.0f;
  }

  // Σ_t dgc_max_selected(k_t) at `step`'s density: what any rank may send.
  std::size_t most_selected(std::size_t length, std::uint64_t step) const {
    const double density = dgc_density(config_.ratio, config_.warmup, step);
    std::size_t total = 0;
    for (const TensorSlice& t : selection_slices(layout(), length, config_.scope)) {
      total += dgc_max_selected(sparse_count(density, t.elements));
    }
    return total;
  }

  DgcConfig config_;
  // This step's new u and v over the whole vector, and what it sends.
  std::vector<float> momentum_, accumulated_;
  std::vector<std::size_t> selected_;
  std::vector<float> sample_scratch_;
  std::vector<std::uint32_t> magnitude_scratch_;
};

// clip=off or a threshold > 0.
double read_clip(const SpecSyntax& spec, CodecParams& params) {
  for (const auto& [key, value] : spec.params) {
    if (key != "clip" || value == "off") continue;
    double clip = 0;
    try {
      clip = params.number("clip", 0.0, 1e300, 0.0);
    } catch (const InvalidArgument&) {
      clip = 0;
    }
    if (clip <= 0) {
      throw InvalidArgument("codec dgc: clip=" + value + " is not valid; give clip=off or a "
                            "norm threshold above 0");
    }
    return clip;
  }
  params.choice("clip", {"off"}, "off");
  return 0.0;
}

}  // namespace

std::unique_ptr<Codec> make_dgc_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  DgcConfig config;
  config.ratio = read_sparse_ratio(params, "dgc");
  config.scope = read_selection_scope(params);
  config.momentum = params.number("momentum", 0.0, 0.999999, 0.9);
  config.clip = read_clip(spec, params);
  const double warmup = params.number("warmup", 0.0, 1e15, 0.0);
  if (warmup != std::floor(warmup)) {
    throw InvalidArgument("codec dgc: warmup=" + format_number(warmup) +
                          " is not valid; give a whole number of steps");
  }
  config.warmup = static_cast<std::uint64_t>(warmup);
  config.sample = params.number("sample", 0.0, 1.0, 0.01);
  if (config.sample <= 0) {
    throw InvalidArgument("codec dgc: sample=0 samples nothing; give the fraction of elements "
                          "sampled for the threshold in (0, 1], e.g. sample=0.01");
  }
  params.finish();
  return std::make_unique<DgcCodec>(config, settings);
}

}  // namespace qccl
