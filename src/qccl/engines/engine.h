// What a training step needs from an engine, whatever the engine does with
// the model's parameters: replicas with gradient buckets (data parallel),
// shards gathered around each layer (fully sharded, QSDP), ... A step
// algorithm (step_algorithm.h) drives an engine through this interface.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/common/duration.h"
#include "qccl/common/export.h"
#include "qccl/scheduling/bucket_plan.h"

QCCL_API_BEGIN
namespace qccl::engines {

// Seconds since the start of a step's first forward pass.
struct OracleInterval {
  double start = 0;
  double end = 0;
};

// One gradient oracle's outcome and times, in seconds.
struct OracleResult {
  // This rank's loss value at the first oracle of a step (later oracles of
  // the same step, at other points, leave it).
  double loss = std::numeric_limits<double>::quiet_NaN();
  double compute = 0;      // forward and backward, the engine's hooks included
  double waiting = 0;      // blocked after backward until the exchange completed
  double encode = 0;       // the exchange's encoding, summed over buckets
  double communicate = 0;  // the exchange's transfers and in-transit reductions
  double decode = 0;
  // Minor page faults the exchange's communication thread took (the
  // training thread's are counted around the whole step by its caller).
  std::uint64_t communication_faults = 0;
  // Rows of embedding tables whose gradients came sparse, over every rank
  // (the data-parallel engine; 0 for dense models).
  std::uint64_t sparse_rows = 0;
  // The step's timeline, for finding what a step waits on: when each part
  // of the exchange ran on the communication thread (the data-parallel
  // engine's buckets, in bucket order) and when each part handed out by
  // compute_gradients_in_parts was being updated. Engines that do not split
  // their exchange leave them empty. A step of several oracles lists each
  // oracle's in turn, all from `timeline_origin`: the first oracle's start,
  // set by it (left at the clock's epoch, it means "not yet").
  std::vector<OracleInterval> exchanges;
  std::vector<OracleInterval> updates;
  Clock::time_point timeline_origin{};
};

// The integer codecs' counters of an engine's last exchange (IntSGD §4.2),
// an optional capability: engines whose codecs report them offer it
// (Engine::exchange_counters()), the others do not.
class ExchangeCounters {
 public:
  // Over buckets: largest integer sent, clipped coordinates summed.
  virtual CodecStepStats exchange_stats() const = 0;

 protected:
  ~ExchangeCounters() = default;
};

// An exchange cut into buckets of whole tensors that can be re-planned
// between steps, with the profile MergeComp plans from (MergeComp §4.3):
// an optional capability (Engine::bucketed_exchange()).
class BucketedExchange {
 public:
  // Elements of each parameter, in registration order, and all of them.
  virtual std::vector<std::size_t> tensor_elements() const = 0;
  virtual std::size_t elements() const = 0;
  // The last step's profile, per tensor in registration order: seconds from
  // the step's start until the tensor's gradient was ready (NaN for a
  // parameter backward did not reach), and until backward returned.
  virtual const std::vector<double>& ready_seconds() const = 0;
  virtual double backward_seconds() const = 0;
  virtual const BucketPlan& plan() const = 0;
  virtual const BucketPolicy& policy() const = 0;
  // Rebuilds the buckets with `policy` between steps (collective).
  virtual void replan(std::shared_ptr<const BucketPolicy> policy) = 0;

 protected:
  ~BucketedExchange() = default;
};

// Receives a part of the optimizer's tensors whose mean gradients are final.
using PartReady = std::function<void(std::span<const torch::Tensor> parameters)>;

class Engine {
 public:
  Engine() = default;
  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The tensors the optimizer updates: the model's parameters (data
  // parallel) or this rank's shards of them (sharded).
  virtual std::vector<torch::Tensor> optimizer_parameters() = 0;
  // Makes every rank's model equal to rank 0's (and `buffers`).
  virtual void broadcast_from_root(std::vector<torch::Tensor> buffers = {}) = 0;

  // One gradient oracle: runs `loss` (the forward pass on this rank's batch,
  // returning the mean loss), back-propagates it, and leaves the mean
  // gradient over ranks in the .grad of optimizer_parameters(). Times add
  // up in `result`, which gets the loss (if it has none yet) as soon as it is
  // known, so a caller still has it when the exchange fails. NaN or Inf in any rank's gradients raises a
  // NonFiniteError on every rank, before anything is sent, naming the step
  // and the bucket; the engine stays ready for the next oracle.
  virtual void compute_gradients(const std::function<torch::Tensor()>& loss,
                                 OracleResult& result) = 0;
  // The same oracle, handing the mean gradients out part by part: `on_part`
  // runs on this thread for each part of optimizer_parameters() as soon as
  // that part's .grad holds its mean — every tensor in exactly one part,
  // every part before this returns — so the caller can update those tensors
  // while later parts are still being exchanged. Parts come only once every
  // rank's gradients are known to be finite, so a NonFiniteError still
  // comes before any part. Time spent in `on_part` is not counted in
  // `result`. This default hands out one part, after compute_gradients.
  virtual void compute_gradients_in_parts(const std::function<torch::Tensor()>& loss,
                                          OracleResult& result, const PartReady& on_part) {
    compute_gradients(loss, result);
    const auto tensors = optimizer_parameters();
    on_part(tensors);
  }

  // Optimizer feedback for codecs that need it (IntSGD): before the
  // optimizer changes the parameters, and after, with the next step's size.
  virtual void before_update() = 0;
  virtual void after_update(double next_step_size) = 0;

  // This rank's engine state for checkpoints: every codec's state and step
  // counter, and the per-tensor codec state.
  virtual void save(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load(torch::serialize::InputArchive& archive) = 0;

  // Engines that keep only shards of the parameters between oracles
  // (sharded) put the exact parameters into the model until release_model(),
  // for evaluation, replica checks and checkpoints (collective). Calls nest:
  // the parameters go at the last release_model(). A data-parallel replica
  // always holds them: nothing to do.
  virtual void gather_model() {}
  virtual void release_model() {}
  // Engines whose oracles compute with other weights than the parameters
  // (sharded with a quantizing weights codec: QSDP's Q^w(W)) put those
  // weights into the model until release_model() and return true: the
  // weights the next oracle would compute with, without changing any
  // state that training sees (collective). Others return false and change
  // nothing.
  virtual bool gather_computed_model() { return false; }
  // A checksum of the weights the last oracle computed with where they are
  // not the model's parameters (sharded: the gathered, dequantized ones),
  // equal on every rank; 0 where they are.
  virtual std::uint64_t computed_checksum() const { return 0; }

  // For summaries and logs: the gradients' codec, the weights' where the
  // engine gathers weights (empty otherwise), and how the exchange is laid
  // out ("ddp: 25 MiB cap, ...", "sharded: 5 groups, ...").
  virtual std::string codec_spec() const = 0;
  virtual std::string weights_codec_spec() const { return {}; }
  virtual std::string layout_name() const = 0;
  virtual std::size_t bucket_count() const = 0;
  virtual std::size_t elements() const = 0;
  // Bytes of one rank's encoded exchange per oracle.
  virtual double payload_bytes() const = 0;
  // Data bytes this rank's gradient (or weight) exchanges have sent so far,
  // as its transports counted them (Communicator::data_bytes_sent).
  virtual std::uint64_t bytes_sent() const = 0;
  // The integer codecs' counters of the last exchange, where the engine
  // offers them; null otherwise.
  const ExchangeCounters* exchange_counters() const { return exchange_counters_; }
  // The re-plannable buckets, where the engine has them (data parallel);
  // null otherwise.
  BucketedExchange* bucketed_exchange() const { return bucketed_exchange_; }
  // Oracles begun so far (failed and skipped ones included), which messages
  // name; a resumed run sets it once.
  virtual std::uint64_t steps_begun() const = 0;
  virtual void set_steps_begun(std::uint64_t steps) = 0;

 protected:
  void offer_exchange_counters(const ExchangeCounters* counters) { exchange_counters_ = counters; }
  void offer_bucketed_exchange(BucketedExchange* buckets) { bucketed_exchange_ = buckets; }

 private:
  const ExchangeCounters* exchange_counters_ = nullptr;
  BucketedExchange* bucketed_exchange_ = nullptr;
};

// The exact parameters in the model for the lifetime of the scope.
class WholeModel {
 public:
  explicit WholeModel(Engine& engine) : engine_(engine) { engine_.gather_model(); }
  ~WholeModel() { engine_.release_model(); }
  WholeModel(const WholeModel&) = delete;
  WholeModel& operator=(const WholeModel&) = delete;

 private:
  Engine& engine_;
};

}  // namespace qccl::engines
QCCL_API_END
