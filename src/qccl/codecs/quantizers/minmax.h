// QSDP's quantizers (QSDP §4.1 Definition 1 and Lemma 5, §5.1, §5.2 and
// Appendix C): bucketed min-max quantization as QSDP's backend sends weights
// and gradients. Each bucket of `bucket` values is mapped onto its own
// [min, max] with 2^bits levels and sent as (fp32 min, fp32 max) and one
// bits-wide level index per value:
// - rounding=stochastic: unbiased random rounding between the two
//   neighbouring levels (the gradients' quantizer);
// - rounding=shift: Q^w_δ, the random-shift lattice of Definition 1 with
//   δ = (max − min)/(2^bits − 1) per bucket: one shift ρ ~ U[−½, ½) per
//   vector per step from the shared counter-based generator (never sent),
//   r = ρ·δ, and each value rounded to the NEAREST point of min + δZ + r —
//   the floor written in §4.1 would be biased by −δ/2. Then E[Q(v)] = v,
//   every value's error is uniform on [−δ/2, δ/2) (variance δ²/12 whatever
//   its position), and all values of a bucket move together (dependent
//   across coordinates, as the analysis needs);
// - rounding=dither: the same shared draw used as a dither on the fixed
//   grid, Q(x) = min + δ·⌊(x − min)/δ + u⌋ with u = ρ + ½: unbiased,
//   dependent across coordinates, and exactly Lemma 5's variance
//   δ²·Σ_i {v_i/δ}(1 − {v_i/δ}) — which is the variance this rounding has,
//   not Definition 1's shifted lattice (a value on δZ has no error here,
//   and error up to δ/2 there);
// - levels=learned (§5.2): the levels fitted to the ranks' values, weighted
//   by each bucket's (max − min)² (the error they cause), identical on every
//   rank, refitted at steps refit·2^j (schedule=doubling) or at the paper's
//   steps 400, 1900 and 3800 scaled by refit/400 (schedule=paper). Two fits:
//   fit=descent, the exact coordinate descent over a fine grid that Q-GenX's
//   QAda uses on stochastic rounding's variance (level_statistics.h), never
//   worse than the levels it starts from; fit=sgd, Algorithm 2's gradient
//   steps on the nearest-rounding error (levels_sgd.h). Learned levels
//   change only the levels: with rounding=stochastic a value rounds at
//   random between its two levels; with rounding=shift the learned levels
//   are shifted as the lattice is, each level ℓ_k by ρ times the gap on the
//   side it moves to (ρ·(ℓ_{k+1} − ℓ_k) for ρ >= 0, ρ·(ℓ_k − ℓ_{k−1})
//   below), and a value rounds to the nearest shifted level — evenly
//   spaced levels give exactly Q^w_δ; uneven ones are no longer exactly
//   unbiased (the gaps on a value's two sides differ).
// Ranks' buckets have their own scales, so encodings are gathered and
// decoded (Aggregation::allgather_decode); every rank decodes the same bytes.
// On device data (docs/gpu.md) evenly spaced levels run as kernels, in
// buckets or with one pair per vector (bucket=0: one bucket of the whole
// vector) (ElementForm::Code::minmax_gathered, codecs/minmax_records.h);
// learned levels are refitted from values on the host and are refused
// there.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

enum class MinMaxRounding { stochastic, shift, dither };
enum class LevelsFit { descent, sgd };
enum class RefitSchedule { doubling, paper };

struct MinMaxConfig {
  int bits = 8;                // 2..8: 2^bits levels per bucket
  std::size_t bucket = 1024;   // values per (min, max); 0: one pair per vector
  MinMaxRounding rounding = MinMaxRounding::stochastic;
  bool learned = false;        // levels fitted to the data (stochastic or shift rounding)
  std::uint64_t refit = 400;   // the first fit's step; the next ones follow `schedule`
  LevelsFit fit = LevelsFit::descent;
  RefitSchedule schedule = RefitSchedule::doubling;
};

// Whether learned levels are refitted at `step`: refit·2^j (doubling), or
// refit, 4.75·refit and 9.5·refit rounded (paper: 400, 1900 and 3800 at
// refit = 400, QSDP §5.2).
bool is_refit_step(const MinMaxConfig& config, std::uint64_t step);

class MinMaxCodec final : public Codec {
 public:
  MinMaxCodec(MinMaxConfig config, CodecSettings settings);
  ~MinMaxCodec() override;

  std::string spec() const override;
  CodecTraits traits() const override {
    return {.unbiased = !(config_.learned && config_.rounding == MinMaxRounding::shift),
            .aggregation = Aggregation::allgather_decode,
            .granularity = config_.bucket == 0 ? std::size_t{1} : config_.bucket,
            .means_of_decoded_values = true,
            .device_step = !config_.learned};
  }
  CodecBounds bounds(const BoundsQuery& query) const override;
  std::string spec_for_tensor(std::size_t elements, std::size_t learned_levels_min) const override;
  std::vector<std::byte> save_state() const override;
  void load_state(std::span<const std::byte> state) override;

  const MinMaxConfig& config() const { return config_; }
  // The levels in use on [0, 1] (2^bits of them, 0 and 1 included).
  std::span<const double> levels() const;
  // Whether the latest step refitted the learned levels.
  bool refitted() const { return refitted_; }

  struct Tables;

 protected:
  // Refits the learned levels on their steps (a collective of its own
  // before the step's exchange); ranks must quantize with the same levels.
  StepPreparation prepare(Communicator& comm, const StepSetup& setup, const Operation& operation,
                          const CollectiveOptions& options) override;
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override;

 private:
  std::size_t encoded_bytes(std::size_t count) const;
  void refit(Communicator& comm, std::span<const float> input, const CollectiveOptions& options);
  void install(std::vector<double> levels);

  MinMaxConfig config_;
  std::shared_ptr<const Tables> tables_;
  bool refitted_ = false;
  // The step whose fit the levels hold: a step that runs twice (the
  // sharded engine gathers a block for forward and again for backward)
  // must quantize the same way both times, and Algorithm 2 is no fixed
  // point. Cleared by load_state, which installs other levels.
  std::optional<std::uint64_t> fitted_at_;
};

std::unique_ptr<Codec> make_minmax_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
