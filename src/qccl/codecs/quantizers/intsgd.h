// The IntSGD family (IntSGD): gradients scaled by a factor α that every
// rank knows, rounded to integers, and summed exactly by the allreduce.
//
// - intsgd: adaptive α from the optimizer's history (Algorithm 1, Proposition
//   2; one α per tensor of the layout, Algorithm 2). The first step is exact
//   (§4.1).
// - intsgd-heuristic: the baseline of Sapio et al. (SwitchML), §5.2:
//   α = (2^(b−1) − 1)/(n·2^max_exp), max_exp from a MAX allreduce (the global
//   ∞-norm exchange every codec makes). Needs no history; no guarantee.
// - intdiana: IntDIANA (Algorithm 3): rounds g_i − h_i instead of g_i, with a
//   per-rank shift h_i and the global shift h = mean h_i, so the integers stay
//   small even when the ranks' gradients differ at the optimum (Appendix A.2).
//   With the L-SVRG estimator on the caller's side this is VR-IntDIANA.
//
// Operations: allreduce mean for all three; reduce-scatter mean for intsgd
// and the heuristic (the integers of a block are summed exactly like the
// whole vector's). IntDIANA has no reduce-scatter: its global shift h must be
// known in full on every rank, and a reduce-scatter leaves each rank only
// its block of the mean. None has an allgather: the scale is sized for a sum
// of n gradients and an optimizer step, which gathered values are not.
//
// Per-tensor state — IntSGD's moving average r and IntDIANA's shifts — lives
// in the codec's TensorStateStore under the tensor's name.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "qccl/codecs/quantizers/adaptive_scale.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/quantizers/int_rounding.h"
#include "qccl/codecs/quantizers/integer_sum_reduction.h"
#include "qccl/collectives/collective_call.h"

namespace qccl {

enum class IntegerScheme { adaptive, heuristic, diana };

struct IntegerCodecConfig {
  IntegerScheme scheme = IntegerScheme::adaptive;
  IntRounding rounding = IntRounding::random;
  IntWire wire = IntWire::int8;
  // Proposition 2's moving average and safeguard (adaptive and diana).
  double beta = 0.9;
  double epsilon = 1e-8;
};

class IntegerCodec final : public Codec, public StepFeedback {
 public:
  IntegerCodec(IntegerCodecConfig config, CodecSettings settings);

  std::string spec() const override;
  // No native equivalent: only the first step (exact fp32) could; the
  // integer sums cannot.
  CodecTraits traits() const override;
  CodecBounds bounds(const BoundsQuery& query) const override;

  // Optimizer feedback (offered by adaptive IntSGD and IntDIANA, whose
  // scales follow the model's updates; not by the heuristic).
  void observe_step(double next_step_size, std::span<const float> update) override;
  void observe_step(double next_step_size, std::span<const double> update);
  void observe_step_norms(double next_step_size, std::span<const double> squared_norms,
                          std::size_t elements) override;
  std::vector<std::byte> save_state() const override;
  void load_state(std::span<const std::byte> state) override;

  // The same step on fp64 data: the convex experiments keep their iterates
  // and shifts in fp64, and only integers travel. Advances the step.
  using Codec::allreduce_mean;
  void allreduce_mean(Communicator& comm, std::span<double> data,
                      const CollectiveOptions& options = {});

  const IntegerCodecConfig& config() const { return config_; }
  // The scales the next step uses, one per tensor, for `length` elements on
  // `ranks` ranks (adaptive and diana; empty before the first feedback).
  std::vector<double> scales(std::size_t length, int ranks) const;

 protected:
  // The length checks, and the scales' digest: the scales enter the call
  // check, so ranks whose optimizer histories differ (and hence their α)
  // fail with a MismatchError instead of decoding each other's integers
  // with the wrong scale.
  StepPreparation prepare(Communicator& comm, const StepSetup& setup, const Operation& operation,
                          const CollectiveOptions& options) override;
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override;
  void move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                 const Operation& operation, const CollectiveOptions& options) override;
  void complete_step(const StepSetup& setup, Encoding* encoding,
                     const Operation& operation) override;

 private:
  bool ready() const;  // every tensor observed (adaptive, diana)
  std::size_t scaled_length() const;
  bool exact_step() const { return config_.scheme != IntegerScheme::heuristic && !ready(); }
  std::span<double> scale_state(const TensorSlice& tensor) const;
  std::vector<double> step_scales(double norm, std::size_t length, int ranks) const;
  std::string scales_digest(int ranks) const;
  double abs_error(double norm, int ranks) const;
  std::optional<double> variance(std::size_t d, int ranks) const;
  IntegerSumSetup reduction_setup(const StepSetup& setup, std::size_t length);
  template <class T>
  void observe(double next_step_size, std::span<const T> update);
  // IntDIANA's h_i (local) and h (global) of a tensor, in the store.
  std::span<double> shift(const TensorSlice& tensor, bool global) const;
  template <class Int, class T>
  void finish_integers(std::span<T> data, std::span<const double> alphas, int ranks,
                       std::span<float> own);
  template <class T>
  void finish_integers_of_wire(std::span<T> data, std::span<const double> alphas, int ranks,
                               std::span<float> own);
  void check_length(std::size_t length) const;
  template <class T>
  void subtract_local_shift(std::span<const T> g, std::span<T> out) const;
  // The integer step of the fp64 allreduce_mean, inside its call.
  void sum_integers_fp64(Communicator& comm, CollectiveCall& call, const StepSetup& setup,
                         std::span<double> data, const CollectiveOptions& options);

  IntegerCodecConfig config_;
  AdaptiveScale scale_;
  std::size_t observed_length_ = 0;  // length of the last observed update
  // This step's integer sums (from step_encoding until complete_step; null
  // on an exact or all-zero step), whose counters complete_step reads.
  IntegerSumReduction* integers_ = nullptr;
  // Reused buffers (the step's encoding writes the integers here).
  std::vector<double> difference_;
  std::vector<float> fp32_view_;
  std::vector<std::byte> local_integers_, summed_integers_;  // in the wire type
  std::vector<double> alphas_;                               // this step's scales
};

std::unique_ptr<Codec> make_intsgd_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_heuristic_intsgd_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_intdiana_codec(const SpecSyntax& spec, CodecSettings settings);
// Any of the three from a spec string, as the concrete type (fp64 steps).
std::unique_ptr<IntegerCodec> make_integer_codec(std::string_view spec, CodecSettings settings = {});

}  // namespace qccl
