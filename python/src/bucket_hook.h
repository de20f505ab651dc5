// The native side of qccl's DDP communication hook (docs/pytorch.md).
//
// PyTorch's reducer calls the hook once per gradient bucket, in bucket
// index order on every rank, and waits for the returned future at the end
// of backward. Here each call only queues the bucket on a stream of its own
// (a communicator split from the world, and a thread): the bucket's codec
// averages it across ranks there while backward goes on, and `done` is
// called on the stream's thread with None or the exception, which completes
// the future — the overlap DDP's own allreduce has.
//
// State lives as in qccl's data-parallel engine: one codec instance per
// bucket index (its step counter keys the random rounding), told the names
// and shapes of the bucket's parameters; per-parameter state (error
// feedback residuals, IntSGD's moving averages, PowerSGD's factors) in one
// store keyed by parameter name, so it survives DDP's bucket rebuild after
// the first iteration. Codecs that adapt to the optimizer (IntSGD §4) get
// x_k − x_{k−1} and the step size: the hook sees the parameters at each
// step, before the optimizer moves them, so it observes the previous
// step's update then.
//
// Every use of a codec runs on the stream's thread, in submission order,
// so a bucket's state is never touched by two threads at once.
//
// Python threads may submit, save, load and close at once: the stream is a
// ClosableStream, which close() — from Python, from qccl.shutdown(), or
// when the hook is deleted — ends only after the buckets queued, turning
// later calls away with an error naming who closed it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "context.h"
#include "closable_stream.h"
#include "device_bucket.h"
#include "group_runner.h"
#include "python_object.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/tensor_state.h"
#include "qccl/collectives/stream.h"
#include "qccl/common/half_precision.h"

namespace qccl::python {

struct ParameterInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t elements = 0;  // the product of shape, set by the hook
};

// One bucket as the reducer hands it over.
struct BucketCall {
  std::size_t index = 0;                  // the reducer's bucket index
  std::uintptr_t gradients = 0;           // the bucket's flat buffer, fp32 or `half`
  std::size_t count = 0;                  // its elements
  std::vector<std::size_t> parameters;    // the bucket's parameters, by number, in buffer order
  std::vector<std::uintptr_t> values;     // their current values (fp32), for optimizer feedback
  std::optional<double> step_size;        // the learning rate the mean will be applied with
  std::optional<HalfType> half;           // a bf16 or fp16 bucket; none for fp32
  std::size_t half_chunk = 0;             // a half bucket's elements per chunk (parameter_chunks.h)
  // Where `gradients` lives. A device bucket is fp32 (the Python side
  // widens a half one on the device) and averaged by the codec's device
  // step (Codec::allreduce_mean on a DeviceVector): only codes cross to
  // the host. `stream` and `device` say where its producer ran (CUDA).
  BucketMemory memory = BucketMemory::host;
  std::uintptr_t stream = 0;
  int device = 0;
  // A device bucket's optimizer feedback (codecs that adapt to it): Σ of
  // the squared update since the last call, per parameter in bucket order,
  // computed where the parameters live; empty until every parameter has a
  // previous value (StepFeedback::observe_step_norms).
  std::vector<double> update_norms;
};

class BucketHook final {
 public:
  // Splits the hook's stream from the world (collective). `parameters` are
  // the model's, numbered as BucketCall refers to them.
  static std::shared_ptr<BucketHook> create(std::shared_ptr<Context> context,
                                            const std::string& spec, std::uint64_t seed,
                                            const std::string& algorithm,
                                            std::optional<double> timeout_seconds,
                                            std::vector<ParameterInfo> parameters);
  // The process-group mode: the hook's codec steps run on the calling
  // thread, on the caller's torch.distributed group (`ops`, group_runner.h);
  // no MPI context. Refuses a codec the group cannot carry, naming the mode
  // that runs it. Call with the GIL.
  static std::shared_ptr<BucketHook> create_on_group(pybind11::object ops, const std::string& spec,
                                                     std::uint64_t seed, double timeout_seconds,
                                                     std::vector<ParameterInfo> parameters);
  ~BucketHook();  // closes; create() deletes it without the GIL

  std::string spec() const { return spec_.text(); }
  // Throws InvalidArgument naming the cause when this hook cannot average
  // buckets in `memory` (the codec has no device step, or the build has no
  // CUDA); the hook calls it for a model on a GPU before training.
  void check_bucket_memory(BucketMemory memory) const;
  bool wants_step_feedback() const { return wants_feedback_; }
  // MPI's own allreduce (algorithm native) reports nothing: counted as the
  // ring allreduce of the encodings would send.
  std::uint64_t bytes_sent() const {
    return group_ ? group_->bytes_sent() : stream_->bytes_sent() + native_bytes_.load();
  }
  // Elements this hook has averaged so far, and the codec's wire size of
  // their encodings (for the compression ratio).
  std::uint64_t elements_reduced() const { return elements_reduced_.load(); }
  std::uint64_t encoded_bytes() const { return encoded_bytes_.load(); }
  bool on_group() const { return group_ != nullptr; }
  // Queues `call`; `done` gets None or the exception. On a group the bucket
  // is averaged before submit returns, `done` is not called, and a failure
  // is raised instead. Call without the GIL.
  void submit(BucketCall call, PythonObject done);
  // The state of every bucket's codec and of the per-parameter store, and
  // loading it (in a new process, before the first bucket). Both wait for
  // the buckets in flight. Call without the GIL.
  std::vector<std::byte> save_state();
  void load_state(std::vector<std::byte> bytes);
  // Ends the stream after the buckets in flight; `reason` (e.g. "was
  // closed (DDPHookState.close())") is what later calls are told. Call
  // without the GIL.
  void close(const std::string& reason) {
    if (group_) {
      group_->close(reason);
    } else {
      stream_->close(reason);
    }
  }

 private:
  BucketHook(std::shared_ptr<Context> context, const std::string& spec, std::uint64_t seed,
             const std::string& algorithm, std::optional<double> timeout_seconds,
             std::vector<ParameterInfo> parameters);
  // The group mode's checks: the encoding of a first step must be one a
  // group carries (group_data_path.h).
  void check_group_can_carry() const;
  // The bucket's codec steps (on the stream's thread, or the group's
  // caller): one for an fp32 bucket, one per chunk for a half one.
  void average(Communicator& comm, const BucketCall& call, const std::vector<float>& update);
  void average_half(Communicator& comm, const BucketCall& call, const std::vector<float>& update);
  void average_on_device(Communicator& comm, const BucketCall& call);
  void count_step(const Communicator& comm, const Codec& codec, std::size_t elements);
  // One codec step: the mean of `values` (the parameters' gradients, in
  // order) with the codec instance `codec_index`.
  void average_values(Communicator& comm, std::size_t codec_index, std::span<float> values,
                      const std::vector<std::size_t>& parameters, std::optional<double> step_size,
                      std::span<const float> update);
  // The update since this bucket's previous call, in bucket layout; empty
  // when some parameter has no earlier snapshot (its first step).
  std::vector<float> update_since_last_call(const BucketCall& call);
  void check_bucket(const BucketCall& call) const;
  TensorLayout layout_of(const std::vector<std::size_t>& parameters) const;
  Codec& codec_for(std::size_t bucket, const std::vector<std::size_t>& parameters);  // stream thread only
  void run_on_stream(const std::string& what, std::function<void(Communicator&)> operation);

  std::shared_ptr<Context> context_;
  CodecSpec spec_;  // parsed once, from the hook's argument
  std::uint64_t seed_;
  bool wants_feedback_ = false;
  CollectiveOptions options_;
  Timeout wait_timeout_;
  std::vector<ParameterInfo> parameters_;

  // Stream thread only.
  struct BucketCodec {
    std::unique_ptr<Codec> codec;
    std::vector<std::size_t> parameters;  // the layout it was last given
  };
  std::map<std::size_t, BucketCodec> codecs_;
  std::map<std::size_t, std::pair<std::uint64_t, std::vector<std::byte>>> loaded_;  // step, state
  std::vector<float> half_chunk_;  // a half bucket's chunk, widened to fp32
  DeviceVectorCache device_vectors_;  // CUDA buckets' vectors, kept between steps
  std::shared_ptr<TensorStateStore> store_ = std::make_shared<TensorStateStore>();

  std::mutex snapshots_mutex_;  // the submitting thread's
  std::vector<std::vector<float>> snapshots_;  // by parameter number

  // Set by create(), on the world communicator; shared with the context,
  // which closes it at shutdown.
  std::shared_ptr<ClosableStream> stream_;
  // The process-group mode's instead of a stream (create_on_group).
  std::unique_ptr<GroupRunner> group_;
  std::atomic<std::uint64_t> elements_reduced_{0};
  std::atomic<std::uint64_t> encoded_bytes_{0};
  std::atomic<std::uint64_t> native_bytes_{0};
};

}  // namespace qccl::python
