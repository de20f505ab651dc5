// The fully-sharded engine: QSDP (QSDP §3–§5, Algorithm 1) on the FSDP
// design. Each rank owns 1/n of every parameter and of its optimizer state;
// whole weights exist only around the block that uses them:
//
//   forward, block l: wait for its gathered weights, start gathering block
//     l+1 (prefetch), run the block with autograd, then free the weights'
//     memory (the block's graph keeps its activations and views of that
//     memory); the last block keeps its weights for its backward, which
//     comes next, and starts gathering the block before it;
//   backward, block l: gather its weights into the same memory again, start
//     gathering block l−1, back-propagate through the block's graph, free
//     the weights, and start reduce-scattering the block's gradients so
//     that each rank gets the mean of its own shard.
//
// The model's parameters outside its blocks (embeddings, final norm) form
// unit 0, gathered for the whole oracle (FSDP's root unit) together with
// every block's biases and norms; a model without blocks is unit 0 alone. The optimizer updates only this rank's shards.
//
// Quantized weights (§4.1, §5.1): the weights codec (minmax:rounding=shift,
// Definition 1's random-shift lattice, by default) encodes each shard once
// per gather and every rank decodes every shard, so every rank — the
// shard's owner too — computes with bitwise the same dequantized weights.
// Both gathers of a block in one oracle use the codec at the same step, so
// backward sees exactly the weights forward saw. Quantized gradients: the
// gradients codec's reduce-scatter (minmax stochastic rounding, unbiased).
// Biases and normalization parameters (tensors of one dimension) stay full
// precision both ways. Learned levels (§5.2, levels=learned or qada) are
// kept for groups of at least `learned_levels_min` elements ("layers over
// 10^5 parameters"); smaller groups get uniform levels. Weights and
// gradients have codecs, and learned levels, of their own.
//
// Each matrix (a layer's weight, an embedding) is a group of its own, with
// codecs of its own, as §5 quantizes per layer: a bucket never straddles
// two layers, and learned levels and their threshold apply per layer. Every
// unit's vectors form one more group (in unit 0: a fraction of a percent
// of a model, so one exchange instead of a small one per block and pass).
// Each group is sharded by the gradients codec's reduce-scatter blocks (its
// granularity, e.g. minmax's bucket, is kept), so any size and any rank
// count work; a unit's groups are gathered in one piece of work.
// Gathers run on a stream of their own ("weights"), reduce-scatters on
// another ("gradients"), both beside the training thread; at the two ends
// of an oracle, where one of them is idle, its first gather and its last
// reduce-scatters take the idle one (compute_gradients).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/stream.h"
#include "qccl/engines/block_runner.h"
#include "qccl/common/export.h"
#include "qccl/engines/engine.h"

QCCL_API_BEGIN
namespace qccl::engines {

using NamedTensor = std::pair<std::string, torch::Tensor>;

// The sharded engine's parts: its groups, units and oracle in progress
// (defined in sharded_parts.h, for its implementation files only).
struct ShardedEngineGroup;
struct ShardedEngineUnit;
struct ShardedEngineStep;

struct ShardedOptions {
  CodecSpec weights_codec;    // fp32 unless given
  CodecSpec gradients_codec;  // fp32 unless given
  std::uint64_t seed = 0;
  CollectiveOptions collective;                  // algorithm, timeout of each exchange
  Timeout timeout = std::chrono::seconds(300);   // bound on every wait for an exchange
  // Groups smaller than this get uniform levels instead of learned ones.
  std::size_t learned_levels_min = 100000;
};

// Parameters gathered together: a block, or unit 0 (everything else).
struct ShardedUnit {
  std::string name;
  std::vector<NamedTensor> parameters;
};

// Unit 0: `model`'s parameters outside `blocks`; then one unit per block,
// its parameters named "blocks.L.NAME".
std::vector<ShardedUnit> sharded_units(torch::nn::Module& model,
                                       const std::vector<torch::nn::Module*>& blocks);

class ShardedEngine final : public Engine, public BlockRunner {
 public:
  // Builds the groups and codecs, checks that every rank has the same layout
  // and codecs (MismatchError otherwise), gives every rank rank 0's values,
  // keeps this rank's shards and frees the parameters' data. Collective.
  // `units[0]` is the unit gathered for the whole oracle; units[l + 1] is
  // the model's block l. Parameters must be fp32, contiguous, on the CPU.
  ShardedEngine(Communicator& comm, std::vector<ShardedUnit> units, ShardedOptions options);
  ~ShardedEngine() override;
  ShardedEngine(const ShardedEngine&) = delete;
  ShardedEngine& operator=(const ShardedEngine&) = delete;

  // Engine.
  std::vector<torch::Tensor> optimizer_parameters() override;  // this rank's shards
  // The parameters are one distributed model already (rank 0's values were
  // given to every rank at construction); this broadcasts `buffers`.
  void broadcast_from_root(std::vector<torch::Tensor> buffers = {}) override;
  void compute_gradients(const std::function<torch::Tensor()>& loss,
                         OracleResult& result) override;
  void before_update() override {}
  void after_update(double) override {}
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
  std::string codec_spec() const override;  // the gradients' codec
  std::string weights_codec_spec() const override;
  std::string layout_name() const override;
  std::size_t bucket_count() const override { return groups_.size(); }
  std::size_t elements() const override { return elements_; }
  // This rank's encoded shards per oracle: every gather (two per block, one
  // for unit 0 and for the last block, kept from its forward to its
  // backward) and its gradient (the gradients codec's size of the whole
  // vector, which a reduce-scatter sends about (n − 1)/n of).
  double payload_bytes() const override;
  std::uint64_t bytes_sent() const override;
  std::uint64_t steps_begun() const override { return step_; }
  void set_steps_begun(std::uint64_t steps) override { step_ = steps; }
  // The exact fp32 parameters in the model (an allgather of the shards);
  // nested calls gather once.
  void gather_model() override;
  void release_model() override;
  // The weights the next oracle gathers (QSDP's Q^w(W): each group's
  // weights codec at the next oracle's step; fp32 groups exact), with every
  // codec's state and step restored afterwards. False, and nothing
  // gathered, when every weights codec is fp32.
  bool gather_computed_model() override;

  // BlockRunner: the model's forward calls it for block 0, 1, ... in order.
  torch::Tensor run(std::size_t block, const torch::Tensor& input,
                    const BlockForward& forward) override;
  // Block `block`'s backward (BlockFunction's): gather its weights into the
  // memory its graph saved views of, back-propagate `grad_output` from
  // `output` to `input` and the weights, start the reduce-scatter; returns
  // the gradient of `input`.
  torch::Tensor backward_block(std::size_t block, const torch::Tensor& input,
                               const torch::Tensor& output, const torch::Tensor& grad_output);

  // checksum64 of every weight this rank computed with in the last oracle
  // (every gather's decoded values, in order): equal on every rank.
  std::uint64_t computed_checksum() const override { return gathered_checksum_; }
  // The largest number of elements gathered at once in the last oracle.
  std::size_t peak_gathered_elements() const { return peak_gathered_; }
  // "unit NAME: matrices, E elements" per group, for messages and summaries.
  std::string describe_group(std::size_t group) const;
  // The levels-adjusted specs each group's codecs were built with.
  std::string group_weights_spec(std::size_t group) const;
  std::string group_gradients_spec(std::size_t group) const;

 private:
  // Its parts (sharded_parts.h).
  using Group = ShardedEngineGroup;
  using Unit = ShardedEngineUnit;
  using StepState = ShardedEngineStep;

  void build_groups(std::vector<ShardedUnit> units);
  void add_group(std::size_t unit, std::string name, const std::vector<NamedTensor>& parameters);
  void check_layout_agrees();
  // Rank 0's values of every group to every rank; this rank keeps its shard.
  void take_shards_from_root();
  // Queues the unit's gather (on the weights stream unless told otherwise).
  void submit_gather(std::size_t unit, Stream& stream);
  void submit_gather(std::size_t unit) { submit_gather(unit, *weights_stream_); }
  // Waits for the unit's gather and points its parameters at the weights.
  void install(std::size_t unit);
  void release(std::size_t unit);
  void submit_reduce_scatter(std::size_t group, torch::Tensor flat_gradient, Stream& stream);
  // Flattens `gradients` (one per parameter of the unit, in order; undefined
  // ones are zero) group by group and starts their reduce-scatters on
  // `stream`.
  void scatter_unit(std::size_t unit, const std::vector<torch::Tensor>& gradients, Stream& stream);
  // Waits for everything submitted in this oracle; rethrows the first failure.
  void finish_exchanges(OracleResult& result);
  // After a failed oracle: waits for whatever is still in flight (ignoring
  // its errors: the first one is on its way to the caller) and frees the
  // gathered weights, so the next oracle starts clean.
  void abandon_step() noexcept;

  Communicator& comm_;
  ShardedOptions options_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<Unit> units_;
  std::size_t elements_ = 0;
  std::uint64_t step_ = 0;
  int model_gathered_ = 0;  // gather_model() calls not yet released
  std::unique_ptr<StepState> state_;  // the oracle in progress
  std::uint64_t gathered_checksum_ = 0;
  std::size_t peak_gathered_ = 0;
  std::unique_ptr<Stream> weights_stream_, gradients_stream_;  // last: stop before the groups go
};

}  // namespace qccl::engines
QCCL_API_END
