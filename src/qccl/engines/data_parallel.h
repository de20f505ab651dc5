// The data-parallel engine (PyTorch DDP's design on qccl's codecs): every
// rank holds a replica of the model; rank 0's parameters are broadcast at
// the start; during backward a hook on each parameter copies its gradient
// into its bucket, and a bucket whose gradients have all arrived is encoded
// and averaged across ranks on a communication thread while backward goes on
// (the bucket reducer launches buckets in index order on every rank); after
// backward the engine waits for the remaining buckets and writes the mean
// gradients into the parameters' .grad, so any torch optimizer can step.
//
// This is where Global-QSGD §8 puts its codec: a DDP communication hook
// invoked per gradient bucket (25 MB by default) that quantizes, runs the
// allreduce (ring or halving-doubling, with the custom reduction for exponential
// dithering) and dequantizes. IntSGD §4 adds the optimizer feedback below.
//
// The bucket layout comes from a pluggable BucketPolicy (DDP's size-capped
// rule by default). Each bucket has its own codec instance, told the names
// and shapes of its tensors; per-tensor codec state (IntSGD's moving
// averages, IntDIANA's shifts, error-feedback residuals) lives in one store
// keyed by parameter name, so it does not depend on the bucket layout. The
// buckets are reduced on a stream of their own ("gradients"), so the caller's
// communicator stays free during backward.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/tensor_state.h"
#include "qccl/collectives/communicator.h"
#include "qccl/common/duration.h"
#include "qccl/common/export.h"
#include "qccl/engines/engine.h"
#include "qccl/engines/row_gradients.h"
#include "qccl/scheduling/bucket_plan.h"
#include "qccl/scheduling/bucket_reducer.h"

QCCL_API_BEGIN
namespace qccl::engines {

struct EngineOptions {
  CodecSpec codec;  // fp32 unless given
  std::uint64_t seed = 0;
  CollectiveOptions collective;               // algorithm, timeout of each bucket
  std::shared_ptr<const BucketPolicy> policy;  // null: SizeCappedPolicy defaults
  Timeout timeout = std::chrono::seconds(300);  // bound on waiting for a step's buckets
  // The means of a parameter whose gradient came as rows (an embedding with
  // sparse gradients) go into .grad as rows too: a sparse tensor of the
  // rows any rank touched (PyTorch's sparse allreduce gives the same
  // indices), for row-wise optimizers (optimizers.h: lazy Adam, row-wise
  // Adagrad). It takes a codec that keeps zeros (CodecTraits::
  // zero_stays_zero: fp32, fp16, Global-QSGD, QSGD, natural compression);
  // with another the means may be non-zero in any row and .grad is dense.
  // Off: .grad is a dense view of the means, for dense optimizers.
  bool sparse_means = false;
};

// The communication side of one step, in seconds.
struct ReduceTimes {
  double waiting = 0;      // training thread blocked after backward
  double encode = 0;       // summed over buckets, communication thread
  double communicate = 0;
  double decode = 0;
  std::uint64_t communication_faults = 0;  // minor page faults, communication thread
  std::vector<ClockSpan> exchanges;        // when each bucket was in its collective
  std::size_t sparse_rows = 0;             // rows of tensors handed on as rows, all ranks'
};

using NamedTensor = std::pair<std::string, torch::Tensor>;

class DataParallelEngine final : public Engine,
                                 public ExchangeCounters,
                                 public BucketedExchange {
 public:
  // Plans buckets for `parameters` (fp32, contiguous, in registration
  // order), builds a codec per bucket, checks that every rank has the same
  // layout and codec (MismatchError otherwise), splits the gradient stream
  // and registers the hooks. Collective.
  DataParallelEngine(Communicator& comm, std::vector<NamedTensor> parameters,
                     EngineOptions options);
  ~DataParallelEngine() override;
  DataParallelEngine(const DataParallelEngine&) = delete;
  DataParallelEngine& operator=(const DataParallelEngine&) = delete;

  // Engine.
  std::vector<torch::Tensor> optimizer_parameters() override;
  void broadcast_from_root(std::vector<torch::Tensor> buffers = {}) override;
  // begin_step(), loss().backward(), finish_step().
  void compute_gradients(const std::function<torch::Tensor()>& loss,
                         OracleResult& result) override;
  // Bucket by bucket, in the order the reducer completes them.
  void compute_gradients_in_parts(const std::function<torch::Tensor()>& loss,
                                  OracleResult& result, const PartReady& on_part) override;
  void before_update() override { snapshot_parameters(); }
  void after_update(double next_step_size) override { observe_update(next_step_size); }
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
  std::string codec_spec() const override { return codecs_.front()->spec(); }
  std::string layout_name() const override { return policy().name(); }
  std::size_t bucket_count() const override { return plan_.bucket_count(); }
  std::size_t elements() const override { return elements_; }
  double payload_bytes() const override;
  std::uint64_t bytes_sent() const override { return reducer_.data_bytes_sent(); }
  CodecStepStats exchange_stats() const override;
  std::uint64_t steps_begun() const override { return step_; }
  void set_steps_begun(std::uint64_t steps) override { step_ = steps; }

  // The same step in parts, for training loops of one's own
  // (examples/data_parallel.cc). Call before backward: clears .grad and
  // opens the step.
  void begin_step();
  // Call after backward: gradients of parameters that got none are zero;
  // waits for every bucket and writes the means into .grad. On failure the
  // error names the step and the bucket (its first and last tensor) and
  // keeps its type; a NonFiniteError leaves the engine ready for the next
  // step.
  ReduceTimes finish_step();
  // The same, handing each bucket's tensors to `on_part` as soon as their
  // means are in .grad (see Engine::compute_gradients_in_parts); `waiting`
  // then leaves out the time spent in `on_part`.
  ReduceTimes finish_step(const PartReady& on_part);
  // Optimizer feedback for codecs that need it (IntSGD): snapshot before
  // optimizer.step(), observe after it with the next step size.
  bool wants_feedback() const { return wants_feedback_; }
  void snapshot_parameters();
  void observe_update(double next_step_size);

  // Rebuilds the buckets with `policy` between steps (collective: every rank
  // with the same policy, checked as at construction). The codecs are new
  // instances on the same per-tensor state store, at the same step, so
  // per-tensor state (residuals, scales, shifts) carries over: MergeComp's
  // switch from the profiling layout to its plan. Throws InvalidArgument
  // inside a step.
  void replan(std::shared_ptr<const BucketPolicy> policy) override;
  // The last step's profile, per tensor in registration order: seconds from
  // begin_step() until the tensor's gradient reached its hook (NaN for a
  // parameter backward did not reach), and until backward returned
  // (finish_step() was called).
  const std::vector<double>& ready_seconds() const override { return ready_seconds_; }
  double backward_seconds() const override { return backward_seconds_; }
  // Elements of each parameter, in registration order.
  std::vector<std::size_t> tensor_elements() const override;

  const BucketPlan& plan() const override { return plan_; }
  // The rows of the last step's sparse gradients (what was cleared, which
  // rows every rank touched).
  const RowGradients& row_gradients() const { return rows_; }
  const BucketPolicy& policy() const override { return *options_.policy; }
  Codec& codec(std::size_t bucket) { return *codecs_[bucket]; }
  // A description of bucket b for messages: "bucket 2 (fc1.weight .. conv1.bias)".
  std::string describe_bucket(std::size_t bucket) const;

 private:
  void on_gradient(std::size_t tensor, const torch::Tensor& grad);
  // A sparse gradient (an embedding's rows) into the bucket: the tensor's
  // region zeroed, its rows written, their ranges kept. Caller holds mutex_.
  void place_sparse_gradient(std::size_t tensor, const torch::Tensor& grad);
  // Marks bucket b ready, with its support when a tensor of it had a sparse
  // gradient. Caller holds mutex_.
  void bucket_ready(std::size_t bucket);
  // Plans buckets with options_.policy and builds a codec and a buffer per
  // bucket, the codecs at `codec_step`.
  void build_buckets(std::uint64_t codec_step);
  void check_layout_agrees();
  // Zeroes the gradients of parameters backward did not reach and marks
  // their buckets ready.
  void close_step();
  // The ranks whose gradients of this step hold NaN or Inf, as "1, 3"; ""
  // when there are none (one small exchange on the caller's communicator),
  // when the rows of sparse gradients are exchanged too.
  std::string check_gradients_and_exchange_rows();
  // The means of parameter t, which backward gave as rows on some rank and
  // dense on none, into its .grad as those rows.
  void write_rows(std::size_t t, const std::vector<std::uint32_t>& rows);
  // Waits for each bucket in turn, writes its means into .grad and hands
  // its tensors to `on_part`; returns the seconds spent in `on_part`.
  double hand_out_buckets(const PartReady& on_part, Clock::time_point deadline);
  // Bucket b's means into its parameters' .grad.
  void write_means(std::size_t bucket);

  Communicator& comm_;
  EngineOptions options_;
  std::vector<NamedTensor> parameters_;
  std::vector<torch::Tensor> tensors_;  // the same tensors, unnamed
  BucketPlan plan_;
  // Per-tensor codec state of every bucket, keyed by parameter name.
  std::shared_ptr<TensorStateStore> codec_state_ = std::make_shared<TensorStateStore>();
  std::vector<std::unique_ptr<Codec>> codecs_;
  std::vector<std::vector<float>> buckets_;   // gradients, bucket layout
  std::vector<std::vector<torch::Tensor>> bucket_tensors_;  // each bucket's parameters
  // Sparse gradients of this step: per tensor whether its gradient came
  // sparse and its rows' ranges in bucket layout; per bucket the support
  // handed to the codec (none when every gradient in it was dense); the
  // rows over every rank and what is known to be zero in the buckets.
  std::vector<char> sparse_;
  std::vector<std::vector<Range>> tensor_rows_;
  std::vector<std::optional<std::vector<Range>>> supports_;
  RowGradients rows_;
  bool zero_stays_zero_ = false;  // the codec's trait
  // Parameters before the optimizer step, then the update (bucket layout).
  std::vector<std::vector<float>> snapshot_;
  std::vector<unsigned> hook_ids_;
  std::size_t elements_ = 0;
  bool wants_feedback_ = false;
  std::uint64_t step_ = 0;

  std::mutex mutex_;  // guards the per-step state below (hooks may run on any thread)
  bool in_step_ = false;
  Clock::time_point step_start_{};
  std::vector<double> ready_seconds_;
  double backward_seconds_ = 0;
  bool finite_ = true;  // this rank's gradients of the step so far
  std::vector<char> seen_;
  std::vector<std::size_t> pending_;
  BucketReducer reducer_;  // last: its thread stops before the buffers go
};

}  // namespace qccl::engines
QCCL_API_END
