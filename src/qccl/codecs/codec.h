// A codec: one compression scheme's wire format, encoding, decoding and way
// of aggregating, behind one interface for every scheme (PRODUCT.md, layer 3).
//
// A codec instance belongs to one tensor or bucket and keeps that tensor's
// state across steps (the step counter here; error feedback, PowerSGD factors
// or IntSGD scales in the codecs that need them) — nothing is global. Each
// allreduce_mean() call is one step; its randomness is keyed by (seed, step,
// bucket, rank, element), so a run is reproducible from its seed and resumes
// exactly after set_step().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/global_norm.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// How a codec's data is combined across ranks.
enum class Aggregation {
  compressed_domain,  // ring/halving-doubling reduce encoded chunks hop by hop, no decoding
  allgather_decode,   // every rank gathers every encoding, decodes and sums
  hop_recode,         // each hop decodes, adds and re-encodes
};

// What an integer codec (IntSGD §2, §4.2) reports about its latest step.
struct CodecStepStats {
  bool integer = false;             // the fields below apply
  std::uint64_t clipped = 0;       // this rank's coordinates clipped so the sum cannot overflow
  std::uint64_t largest_sent = 0;  // largest |integer| this rank sent
  std::uint64_t largest_sum = 0;   // largest |integer| in the aggregated vector (all ranks agree)
};

struct CodecSettings {
  std::uint64_t seed = 0;    // run seed
  std::uint64_t bucket = 0;  // which tensor/bucket this instance compresses
};

class Codec {
 public:
  explicit Codec(CodecSettings settings) : settings_(settings) {}
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  // Canonical spec with every parameter, e.g. "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off".
  virtual std::string spec() const = 0;
  // E[result] equals the exact mean of the ranks' inputs.
  virtual bool unbiased() const = 0;
  virtual Aggregation aggregation() const = 0;
  // Bytes one rank's encoding of `count` elements takes on the wire.
  virtual std::size_t wire_bytes(std::size_t count) const = 0;
  // The norm the codec exchanges before its allreduce (every codec exchanges
  // one: it is also how non-finite input on any rank is caught everywhere).
  virtual NormKind norm_kind() const { return NormKind::inf; }
  // The reduction allreduce_mean runs at the current step on rank `rank` of
  // `ranks`, given the global norm; exposed so tools can time encode, reduce
  // and decode directly.
  virtual std::unique_ptr<Reduction> reduction_for(double norm, int ranks, int rank,
                                                   Algorithm algorithm) const = 0;
  // Whether every step's reduction maps onto the transport's own allreduce
  // (MPI_Allreduce), so the codec can run with algorithm native: fp32, fp16.
  virtual bool has_native_equivalent() const {
    return reduction_for(1.0, 2, 0, Algorithm::native)->native_equivalent().has_value();
  }
  // A bound that |result - exact mean| never exceeds, for any element, when
  // the ranks' inputs have the given global ∞-norm: the benchmark's
  // correctness check for lossy codecs.
  virtual double max_abs_error(double inf_norm, int ranks, Algorithm algorithm) const = 0;
  // The published bound on E||result - exact mean||^2 for inputs with
  // ||x||_{2,2}^2 = `squared_norm` (sum over ranks of ||x_i||^2) of length d,
  // where the codec's paper gives one; nullopt otherwise.
  virtual std::optional<double> variance_bound(double /*squared_norm*/, std::size_t /*d*/,
                                               int /*ranks*/, Algorithm /*algorithm*/) const {
    return std::nullopt;
  }

  // Replaces `data` on every rank by the (compressed) mean over ranks of the
  // ranks' `data`; every rank ends with bitwise identical values. All ranks
  // call it with the same length and codec spec. Advances the step.
  void allreduce_mean(Communicator& comm, std::span<float> data,
                      const CollectiveOptions& options = {}) {
    run_allreduce_mean(comm, data, options);
    ++step_;
  }

  // Optimizer feedback (IntSGD §4: the scale α_k depends on the step size
  // η_k and on x_k − x_{k−1}). A training loop asks wants_step_feedback()
  // once; if true, after every optimizer step it calls observe_step() with
  // the step size the *next* gradient will be applied with and the update
  // x_k − x_{k−1} of exactly the elements this instance reduces, in the same
  // order. Codecs that do not need it ignore it.
  virtual bool wants_step_feedback() const { return false; }
  virtual void observe_step(double /*next_step_size*/, std::span<const float> /*update*/) {}
  // Splits this instance's elements into consecutive blocks (e.g. the layers
  // of a bucket) that get a scale each (IntSGD Algorithm 2); sizes must add
  // up to the length later passed to allreduce_mean. Ignored by codecs
  // without per-block state.
  virtual void set_blocks(std::span<const std::size_t> /*sizes*/) {}
  // The latest step's counters, for logs.
  virtual CodecStepStats last_step_stats() const { return {}; }

  // The state that persists across steps besides the step counter (scales,
  // shifts), for checkpoints: load_state(save_state()) on a fresh instance
  // with the same spec continues exactly. Stateless codecs save nothing and
  // reject a non-empty state.
  virtual std::vector<std::byte> save_state() const { return {}; }
  virtual void load_state(std::span<const std::byte> state);

  std::uint64_t step() const { return step_; }
  void set_step(std::uint64_t step) { step_ = step; }
  const CodecSettings& settings() const { return settings_; }

 protected:
  virtual void run_allreduce_mean(Communicator& comm, std::span<float> data,
                                  const CollectiveOptions& options) = 0;

 private:
  CodecSettings settings_;
  std::uint64_t step_ = 0;
};

// For tools that run a codec outside a training loop (benchmarks,
// simulations): tells it the update plain SGD would make from this step's
// result, x_(k+1) − x_k = −η·result. A no-op for codecs that need no
// feedback.
void feed_sgd_step(Codec& codec, std::span<const float> result, double step_size = 1.0);

}  // namespace qccl
