// A codec: one compression scheme's wire format, encoding, decoding and way
// of aggregating, behind one interface for every scheme (the codecs layer).
//
// A codec instance belongs to one tensor or bucket and keeps its state
// across steps (the step counter here; scales, shifts and residuals in the
// codecs that need them, per tensor in a TensorStateStore) — nothing is
// global. Each operation is one step; its randomness is keyed by (seed,
// step, bucket, rank, element), so a run is reproducible from its seed and
// resumes exactly after set_step().
//
// Three operations, each where the scheme's math allows (supports() says;
// the others fail with an error naming the codec and the operation):
// - allreduce_mean: every rank's data replaced by the mean over ranks;
// - reduce_scatter_mean: rank r gets the mean of its block (blocks keep the
//   codec's granularity: reduce_scatter_blocks());
// - allgather: each rank's shard encoded once; every rank gets every rank's
//   decoded shard, bitwise identical everywhere.
//
// The contract a scheme implements is narrow: its spec (and the spec it
// needs for one tensor of a given size), its traits and bounds as data
// (CodecTraits, CodecBounds), the three step hooks below, and its state
// (layout, save, load). Optional capabilities (optimizer feedback,
// StepFeedback) are offered, not type-switched on.
//
// Every operation runs one step in three parts, so that any collective can
// carry it:
// 1. prepare(): local checks, any collective work of the codec's own before
//    the step (learned levels), and what the step's exchange carries besides
//    the norm (StepPreparation: a digest that must agree across ranks, and a
//    shared value);
// 2. one exchange — the call check and this rank's statistics (the local
//    norm every codec exchanges, whether its input is finite) in one round
//    trip (CollectiveCall) — after which non-finite input on any rank raises
//    a NonFiniteError on every rank, and step_encoding() builds the step's
//    Encoding from the global norm; the collective (ring, halving-doubling,
//    native; in the compressed domain when the encoding is a Reduction, or
//    by gathering and decoding) moves the data (move_data());
// 3. complete_step() post-processes and updates state. A caller that passes
//    `own` also gets this rank's own decoded contribution Q(x), which error
//    feedback needs (error_feedback.h).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/tensor_layout.h"
#include "qccl/codecs/tensor_state.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/encoding.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class DeviceVector;

enum class CodecOperation { allreduce_mean, reduce_scatter_mean, allgather };
// "allreduce mean", "reduce-scatter mean", "allgather".
std::string_view to_string(CodecOperation operation);

// How a codec's data is combined across ranks.
enum class Aggregation {
  compressed_domain,  // ring/halving-doubling reduce encoded chunks hop by hop, no decoding
  allgather_decode,   // every encoding reaches the ranks that need it, decoded and summed there
};

// What an integer codec (IntSGD §2, §4.2) reports about its latest step.
struct CodecStepStats {
  bool integer = false;             // the fields below apply
  std::uint64_t clipped = 0;       // this rank's coordinates clipped so the sum cannot overflow
  std::uint64_t largest_sent = 0;  // largest |integer| this rank sent
  // Largest |integer| in the aggregated values this rank holds: every rank
  // has the same after an allreduce; after a reduce-scatter, its block's.
  std::uint64_t largest_sum = 0;
};

// Optimizer feedback (IntSGD §4: the scale α_k depends on the step size η_k
// and on x_k − x_{k−1}), an optional capability: only the codecs that need
// it offer it (Codec::step_feedback() is null for the others). A training
// loop asks once; if offered, after every optimizer step it calls
// observe_step() with the step size the *next* gradient will be applied
// with and the update x_k − x_{k−1} of exactly the elements the codec
// reduces, in the same order. Where the update lives in memory the codec
// does not read (a GPU's), observe_step_norms() takes what the codec uses
// of it instead: Σ update² over each tensor of its layout (fp64, in layout
// order; the summation order is the caller's) and the update's length.
class StepFeedback {
 public:
  virtual void observe_step(double next_step_size, std::span<const float> update) = 0;
  virtual void observe_step_norms(double next_step_size, std::span<const double> squared_norms,
                                  std::size_t elements) = 0;

 protected:
  ~StepFeedback() = default;
};

struct CodecSettings {
  std::uint64_t seed = 0;    // run seed
  std::uint64_t bucket = 0;  // which tensor/bucket this instance compresses
};

// The operations a codec offers.
struct CodecOperations {
  bool allreduce_mean = true;
  bool reduce_scatter_mean = true;
  bool allgather = true;

  bool has(CodecOperation operation) const;
  static CodecOperations means_only() { return {true, true, false}; }
};

// What a codec is, as data: its properties whatever the step.
struct CodecTraits {
  // E[result] equals the exact mean of the ranks' inputs.
  bool unbiased = false;
  Aggregation aggregation = Aggregation::compressed_domain;
  // The norm the codec exchanges before its data moves (every codec
  // exchanges one: it is also how non-finite input on any rank is caught
  // everywhere).
  NormKind norm_kind = NormKind::inf;
  // Elements per indivisible unit of the encoding (QSGD's bucket, packed
  // 4-bit pairs): reduce-scatter blocks keep it.
  std::size_t granularity = 1;
  CodecOperations operations;
  // Every step's encoding maps onto the transport's own collective (MPI),
  // so the codec can run with algorithm native: fp32, fp16, PowerSGD's fp32
  // sums.
  bool native_equivalent = false;
  // Aggregation::allgather_decode: the means are the mean of the ranks'
  // decoded values (QSGD, natural compression, Top-k, DGC, the one-bit
  // levels), which the decode-and-sum path then forms itself, the sum in
  // fp32 divided by n — or, where that sum overflows fp32, in double
  // (decode_sum.h). Otherwise (vote counts, TernGrad's levels, which their
  // codecs scale) the path leaves the sum.
  bool means_of_decoded_values = false;
  // The hierarchical algorithm may run its allreduce mean across hosts
  // (collectives/hierarchical.h): the step's encoding follows from the
  // global norm and StepSetup's ranks, rank, step and algorithm alone (not
  // from this rank's input or layout), and its data path is the default one.
  // The algorithm then builds it for the H host means (ranks = H).
  bool host_means = false;
  // An element that is zero on every rank is zero in the result: zero
  // encodes to zero and the codec adds nothing of its own to its input (no
  // error-feedback residuals, shifts or low-rank factors). The
  // data-parallel engine then knows that the means of embedding rows no
  // rank touched are zero, and hands them on as rows.
  bool zero_stays_zero = false;
  // A step can run on device data (Codec::allreduce_mean on a DeviceVector,
  // device_step.cc): its encoding follows from the global norm and the
  // codec's own state (scales), not from this rank's input; it combines in
  // transit through the default data path and offers an element form.
  bool device_step = false;
};

// What a bound is asked for: `count` elements per rank on `ranks` ranks,
// whose inputs have the given global ∞-norm and ||x||_{2,2}^2 (the sum over
// ranks of ||x_i||^2).
struct BoundsQuery {
  std::size_t count = 0;
  double inf_norm = 0;
  double squared_norm = 0;
  int ranks = 1;
  Algorithm algorithm = Algorithm::ring;
};

// A codec's size and accuracy for a BoundsQuery.
struct CodecBounds {
  // Bytes one rank's encoding of `count` elements takes on the wire.
  std::size_t wire_bytes = 0;
  // A bound that |result - exact mean| never exceeds, for any element: the
  // benchmark's correctness check for lossy codecs. Infinity where none
  // exists.
  double max_abs_error = std::numeric_limits<double>::infinity();
  // The published bound on E||result - exact mean||^2, where the codec's
  // paper gives one; nullopt otherwise.
  std::optional<double> variance;
};

// One step of a codec as its collective sees it.
struct StepSetup {
  CodecOperation operation = CodecOperation::allreduce_mean;
  Algorithm algorithm = Algorithm::ring;
  int ranks = 1;
  int rank = 0;
  // How many ranks' values one decoded value combines: n for the means, 1
  // for an allgather (each shard is decoded on its own).
  int summed = 1;
  std::uint64_t step = 0;
  // The global norm of the ranks' inputs (of the codec's norm kind), from
  // the step's exchange; 0 before it.
  double norm = 0;
  // Every rank's StepPreparation::shared of this step, by rank, from the
  // step's exchange (empty before it).
  std::vector<double> shared_values;
  // This rank's input: the whole vector (means) or its shard (allgather),
  // and its length — which a step on device data, whose input the host
  // cannot read (empty `input`), gives alone.
  std::span<const float> input;
  std::size_t input_length = 0;
  // Reduce-scatter: every rank's block of the vector; allgather: every
  // rank's shard within the output. Empty for allreduce.
  std::span<const Range> pieces;
};

// What a codec's prepare() tells the step's exchange.
struct StepPreparation {
  // What must agree across ranks besides the spec, compared by the call
  // check: e.g. a hash of IntSGD's scales or of the tensors' layout.
  std::string digest;
  // A number this rank tells every other rank in the step's exchange,
  // besides its norm, at no extra round (StepSetup::shared_values). Sparse
  // Global-QSGD sends a bound on its non-zeros, so that its gather needs no
  // round of counts.
  double shared = 0;
};

class Codec {
 public:
  explicit Codec(CodecSettings settings) : settings_(settings) {}
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  // Canonical spec with every parameter, e.g. "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off".
  virtual std::string spec() const = 0;
  virtual CodecTraits traits() const = 0;
  virtual CodecBounds bounds(const BoundsQuery& query) const = 0;
  // The spec of this scheme for one tensor of `elements` elements: spec()
  // itself, unless a part of it does not pay off on a tensor that small.
  // Learned quantization levels (QSDP §5.2 learns levels for layers over
  // 10^5 parameters; Q-GenX's QAda) fall back to uniform ones below
  // `learned_levels_min` elements.
  virtual std::string spec_for_tensor(std::size_t /*elements*/,
                                      std::size_t /*learned_levels_min*/) const {
    return spec();
  }

  // Shorthands for the traits and bounds.
  bool unbiased() const { return traits().unbiased; }
  Aggregation aggregation() const { return traits().aggregation; }
  NormKind norm_kind() const { return traits().norm_kind; }
  std::size_t granularity() const { return traits().granularity; }
  bool supports(CodecOperation operation) const { return traits().operations.has(operation); }
  bool has_native_equivalent() const { return traits().native_equivalent; }
  std::size_t wire_bytes(std::size_t count) const;
  double max_abs_error(double inf_norm, int ranks, Algorithm algorithm) const;
  // The same for any operation (an allgather's shards are each one rank's).
  double error_bound(double inf_norm, int ranks, Algorithm algorithm,
                     CodecOperation operation) const;
  std::optional<double> variance_bound(double squared_norm, std::size_t d, int ranks,
                                       Algorithm algorithm) const;
  // The worst-case error of `operation` with the hierarchical algorithm on
  // `hosts` hosts of `ranks_per_host` ranks, `between` hosts (`norm`: the
  // global norm of the inputs, of the codec's kind): for the means, this
  // codec's bound for `hosts` ranks plus the fp32 rounding of the host
  // means; for an allgather, whose shards are each one rank's, the flat one.
  double hierarchical_error_bound(double norm, int hosts, int ranks_per_host, Algorithm between,
                                  CodecOperation operation = CodecOperation::allreduce_mean) const;

  // Throws InvalidArgument naming the codec, the operation and the ones it
  // offers, unless it supports `operation`.
  void check_supported(CodecOperation operation) const;
  // The blocks reduce_scatter_mean gives each of `ranks` ranks for a vector
  // of `count` elements.
  std::vector<Range> reduce_scatter_blocks(std::size_t count, int ranks) const;

  // The Encoding a step with this setup runs (setup.norm the global norm of
  // the ranks' inputs); exposed so tools can time encode, reduce and decode.
  std::unique_ptr<Encoding> encoding_for(const StepSetup& setup) { return step_encoding(setup); }
  // The allreduce encoding on rank `rank` of `ranks` (tools' shorthand), for
  // this rank's `input`: codecs that select or scale from the whole input
  // (Top-k, the scaled signs) build it from there.
  std::unique_ptr<Encoding> encoding_for(double norm, int ranks, int rank, Algorithm algorithm,
                                          std::span<const float> input = {});

  // Replaces `data` on every rank by the (compressed) mean over ranks of the
  // ranks' `data`; every rank ends with bitwise identical values. All ranks
  // call it with the same length and codec spec. Advances the step. With a
  // non-empty `own` (as long as `data`), this rank's decoded contribution
  // Q(data) is written there.
  void allreduce_mean(Communicator& comm, std::span<float> data,
                      const CollectiveOptions& options = {}, std::span<float> own = {});
  // allreduce_mean of values in a device's memory (device_vector.h), with
  // the same bits as allreduce_mean of the same values on the host: the
  // norm statistic, the encoding and the decoding of the mean run where the
  // data is, and only encoded chunks pass through host memory to the ring
  // or halving-doubling collective. For codecs whose step's encoding
  // follows from the global norm and the codec's own state and combines in
  // transit (CodecTraits::device_step: Global-QSGD's dense path, also for
  // sparse=auto, fp16, fp32, IntSGD but IntDIANA); others, and other
  // algorithms, are refused with InvalidArgument. Over a caller's process
  // group (group_data_path.h) the codes move by the group's own allreduce
  // (integer levels, fp16, fp32). Advances the step.
  void allreduce_mean(Communicator& comm, DeviceVector& data, const CollectiveOptions& options = {});
  // reduce_scatter_mean of values in a device's memory: rank r gets the
  // mean of block r of `input` (reduce_scatter_blocks) in `output`, with the
  // same bits as on the host; the encoding, the in-transit reduction's
  // staging and the decoding as for allreduce_mean above (qccl's own
  // communicator only, not a process group). Advances the step.
  void reduce_scatter_mean(Communicator& comm, DeviceVector& input, DeviceVector& output,
                           const CollectiveOptions& options = {});
  // allgather of shards in a device's memory: every rank's `output` gets
  // every rank's `shard` (all the same length), encoded once by its rank
  // and decoded where the data is, with the same bits as on the host; for
  // the codecs above that gather (Global-QSGD, fp16, fp32), qccl's own
  // communicator only. Advances the step.
  void allgather(Communicator& comm, DeviceVector& shard, DeviceVector& output,
                 const CollectiveOptions& options = {});
  // Empty when this codec's steps can run on device data with `algorithm`
  // (any, over a process group), else why not and what to do instead.
  std::string device_step_refusal(Algorithm algorithm, bool on_group) const;
  // allreduce_mean of data that is exactly zero outside `support` (sorted,
  // disjoint element ranges: say the rows of an embedding table that this
  // rank's batch touched; the caller vouches for the zeros). The result is
  // allreduce_mean's, bit for bit. A codec with a sparse path (Global-QSGD
  // sparse=auto) then reads, encodes and writes only the support and what
  // other ranks send, so its time follows the non-zeros rather than the
  // length; the others ignore the hint. InvalidArgument for ranges out of
  // order, overlapping or beyond `data`.
  void allreduce_mean_sparse(Communicator& comm, std::span<float> data,
                             std::span<const Range> support, const CollectiveOptions& options = {});
  // Rank r gets the mean over ranks of block r of `input`
  // (reduce_scatter_blocks(input.size(), n)[r]) in `output`.
  void reduce_scatter_mean(Communicator& comm, std::span<const float> input,
                           std::span<float> output, const CollectiveOptions& options = {},
                           std::span<float> own = {});
  // Every rank contributes a shard of the same length; `output` receives
  // every rank's decoded shard in rank order (n · shard.size() elements).
  void allgather(Communicator& comm, std::span<const float> shard, std::span<float> output,
                 const CollectiveOptions& options = {}, std::span<float> own = {});
  // Shards of different lengths: rank r contributes counts[r] elements.
  void allgatherv(Communicator& comm, std::span<const float> shard,
                  std::span<const std::size_t> counts, std::span<float> output,
                  const CollectiveOptions& options = {}, std::span<float> own = {});

  // The optimizer feedback this codec needs (see StepFeedback), or null.
  StepFeedback* step_feedback() const { return step_feedback_; }
  // The latest step's counters, for logs (integer codecs fill them in).
  const CodecStepStats& last_step_stats() const { return step_stats_; }

  // The tensors this instance's vector is made of, and the store their
  // per-tensor state lives in (null: a store of this instance's own). Codecs
  // take one scale per tensor (IntSGD Algorithm 2), keep residuals and shifts
  // by tensor name, and read shapes. May be called again with another layout
  // (a re-planned bucket): state kept by name carries over.
  virtual void set_layout(TensorLayout layout, std::shared_ptr<TensorStateStore> store = nullptr);
  const TensorLayout& layout() const { return layout_; }

  // The state that persists across steps besides the step counter, for
  // checkpoints: load_state(save_state()) on a fresh instance with the same
  // spec continues exactly. It includes the per-tensor store only when the
  // instance owns it; a shared store is saved once by its owner. Stateless
  // codecs save nothing and reject a non-empty state.
  virtual std::vector<std::byte> save_state() const;
  virtual void load_state(std::span<const std::byte> state);

  std::uint64_t step() const { return step_; }
  void set_step(std::uint64_t step) { step_ = step; }
  const CodecSettings& settings() const { return settings_; }

 protected:
  // What an operation was asked to do.
  struct Operation {
    CodecOperation kind = CodecOperation::allreduce_mean;
    std::span<const float> input;
    std::span<float> output;
    std::span<const Range> pieces;  // reduce-scatter blocks or allgather shards
    std::span<float> own;           // empty: not wanted
    // allreduce_mean_sparse: the input is zero outside `support`.
    bool has_support = false;
    std::span<const Range> support;
  };
  // Runs one operation: by default the three-part step below. A wrapper
  // (error feedback) runs its inner codec's operation instead.
  virtual void run_operation(Communicator& comm, const Operation& operation,
                             const CollectiveOptions& options);

  // 1. Before anything of the step is exchanged: local checks (throw
  // InvalidArgument), collective work of the codec's own that precedes the
  // step (refitting learned levels from every rank's statistics), and what
  // the step's exchange must carry (StepPreparation).
  virtual StepPreparation prepare(Communicator& /*comm*/, const StepSetup& /*setup*/,
                                  const Operation& /*operation*/,
                                  const CollectiveOptions& /*options*/) {
    return {};
  }
  // 2. The encoding of this step, given the global norm (setup.norm); null
  // when every rank's input is zero and so is the result (nothing moves).
  // Throws InvalidArgument, on every rank alike, when the global norm rules
  // the step out (fp16's range). A codec that needs its encoding's own type
  // later in the step (to set exchanged scales, to read counters) keeps a
  // pointer to it: the encoding lives until complete_step() returns.
  virtual std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) = 0;
  // Moves the data: by default the collective body of the codec's
  // aggregation for the operation (default_move_data). A codec with a data
  // path of its own (sparse Global-QSGD, IntDIANA's differences, TernGrad's
  // per-tensor scales, signSGD's votes counted in transit) does its part and
  // calls default_move_data().
  virtual void move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                         const Operation& operation, const CollectiveOptions& options);
  // 3. After the data moved: post-processing of the output and of this
  // rank's own contribution (fp32's division by n, IntDIANA's shifts) and
  // state updates. `encoding` is the one step_encoding() returned: null
  // when nothing moved.
  virtual void complete_step(const StepSetup& /*setup*/, Encoding* /*encoding*/,
                             const Operation& /*operation*/) {}

  // An operation with the hierarchical algorithm (codecs/hierarchical_step.cc):
  // the step's exchange over every rank, fp32 within hosts, this codec
  // across them. Refuses codecs without CodecTraits::host_means and a
  // wanted own contribution.
  void run_hierarchical(Communicator& comm, const Operation& operation,
                        const CollectiveOptions& options);

  // The default data path: the collective body of the codec's aggregation
  // for the operation, in the compressed domain (the encoding must be a
  // Reduction) or by gathering and decoding.
  void default_move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                         const Operation& operation, const CollectiveOptions& options);

  // The in-transit reduction of an encoding this codec built as one; throws
  // if it is not (a bug in the codec).
  Reduction& in_transit(Encoding& encoding) const;

  // Part 2's exchange for data whose local norm statistic (of the norm
  // kind) is `statistic` (NaN: not finite): the call check and the
  // statistics (with the preparation's shared value) in one round trip.
  // Raises NonFiniteError on every rank if any rank's data is not finite,
  // sets setup.norm and setup.shared_values; then the returned call moves
  // the data. For codecs with steps of their own (fp64 data).
  CollectiveCall begin_step(Communicator& comm, StepSetup& setup, double statistic,
                            std::size_t element_count, const CollectiveOptions& options,
                            const StepPreparation& preparation = {}) const;

  // Offers the optimizer feedback capability (from the constructor of a
  // codec that implements StepFeedback, or a wrapper forwarding its inner
  // codec's).
  void offer_step_feedback(StepFeedback* feedback) { step_feedback_ = feedback; }
  // The counters last_step_stats() reports, which the codec's step sets.
  CodecStepStats& step_stats() { return step_stats_; }

  // Turns an output that holds the sum over ranks into their mean (the
  // means; an allgather's shards are left as they are).
  static void sum_to_mean(const StepSetup& setup, const Operation& operation);
  // This rank's norm statistic (local_norm_statistic) of the operation's
  // input, read over its support when it has one.
  double local_statistic(const Operation& operation) const;

  // "global-qsgd:... step 3 bucket 1", for messages.
  std::string step_name() const;
  // For the digest of codecs whose selection or scales follow the tensors
  // (Top-k, Rand-k, DGC, the per-tensor levels): a hash of the layout's
  // names and shapes for the means, empty for an allgather (one tensor per
  // shard) or an unnamed layout. Ranks with different layouts then fail the
  // call check instead of combining mismatched encodings.
  std::string layout_digest(const StepSetup& setup) const;
  // The preparation of such codecs: the means' data must cover the layout
  // (checked here, on every rank before anything is exchanged), and the
  // digest is layout_digest().
  StepPreparation layout_preparation(const StepSetup& setup) const;
  // The setup of this step of `operation` on rank `rank` of `ranks`
  // (without input, pieces or norm).
  StepSetup step_setup(CodecOperation operation, Algorithm algorithm, int ranks, int rank) const;
  // The per-tensor store (this instance's own unless set_layout gave one).
  TensorStateStore& state_store() const { return *store_; }
  bool owns_store() const { return owns_store_; }

 private:
  CodecSettings settings_;
  std::uint64_t step_ = 0;
  TensorLayout layout_;
  std::shared_ptr<TensorStateStore> store_ = std::make_shared<TensorStateStore>();
  bool owns_store_ = true;
  StepFeedback* step_feedback_ = nullptr;
  CodecStepStats step_stats_;

  // This rank's block of a reduce-scatter mean of `count` elements, and of
  // all blocks; InvalidArgument when `output_count` is not its length.
  std::vector<Range> checked_blocks(const Communicator& comm, std::size_t count,
                                    std::size_t output_count) const;
  // A step on device data (device_step.cc): the allreduce mean (`output`
  // is `input`), the reduce-scatter mean (`output`: this rank's block of
  // `pieces`) or the allgather (`input`: this rank's shard of `pieces`).
  void run_device_step(Communicator& comm, CodecOperation kind, DeviceVector& input,
                       DeviceVector& output, std::span<const Range> pieces,
                       const CollectiveOptions& options);

  // The data movement of a hierarchical step, per operation, inside the
  // step's call (hierarchical_step.cc).
  struct HierarchicalMove;
  void move_hierarchical_mean(const HierarchicalMove& move);
  void move_hierarchical_reduce_scatter(const HierarchicalMove& move);
  void move_hierarchical_allgather(const HierarchicalMove& move);
};

// For tools that run a codec outside a training loop (benchmarks,
// simulations): tells it the update plain SGD would make from this step's
// result, x_(k+1) − x_k = −η·result. A no-op for codecs that need no
// feedback.
void feed_sgd_step(Codec& codec, std::span<const float> result, double step_size = 1.0);

}  // namespace qccl
QCCL_API_END
