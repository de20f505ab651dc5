#include "bucket_hook.h"

#include <cstring>

#include "compressor.h"
#include "errors.h"
#include "parameter_chunks.h"
#include "qccl/codecs/group_data_path.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/byte_io.h"
#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

constexpr std::uint64_t kStateMagic = 0x716363'6c686f6f6bULL;  // "qcclhook"

// The codec instances of half-precision chunks, numbered apart from the
// fp32 buckets': chunk k of bucket b is kHalfChunkCodecs + b·2^20 + k.
constexpr std::size_t kHalfChunkCodecs = std::size_t{1} << 40;

// Deleted without the GIL: closing waits for buckets in flight, whose
// completions take the GIL to finish their futures.
void delete_without_gil(BucketHook* ended) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release no_gil;
    delete ended;
  } else {
    delete ended;
  }
}

}  // namespace

std::shared_ptr<BucketHook> BucketHook::create(std::shared_ptr<Context> context,
                                               const std::string& spec, std::uint64_t seed,
                                               const std::string& algorithm,
                                               std::optional<double> timeout_seconds,
                                               std::vector<ParameterInfo> parameters) {
  std::shared_ptr<BucketHook> hook(
      new BucketHook(context, spec, seed, algorithm, timeout_seconds, std::move(parameters)),
      delete_without_gil);
  // The split and the registration under one lease on the world: a
  // concurrent qccl.shutdown() either turns this away or closes the hook.
  auto world = context->use_world("qccl.ddp_hook (" + hook->spec() + ")");
  hook->stream_ = std::make_shared<ClosableStream>(
      world.communicator(), "ddp hook", "this DDP hook", hook->wait_timeout_,
      "create a new hook with qccl.ddp_hook() (before qccl.shutdown()) and register it on the "
      "model");
  context->add_user(hook->stream_);
  return hook;
}

std::shared_ptr<BucketHook> BucketHook::create_on_group(pybind11::object ops,
                                                        const std::string& spec,
                                                        std::uint64_t seed, double timeout_seconds,
                                                        std::vector<ParameterInfo> parameters) {
  std::shared_ptr<BucketHook> hook(
      new BucketHook(nullptr, spec, seed, "ring", timeout_seconds, std::move(parameters)),
      delete_without_gil);
  // Codecs the transport sums itself (fp32, fp16, PowerSGD's two fp32
  // allreduces) run on the group's own allreduce.
  if (make_codec(hook->spec_, CodecSettings{seed, 0})->has_native_equivalent()) {
    hook->options_.algorithm = Algorithm::native;
  }
  hook->group_ = std::make_unique<GroupRunner>(std::move(ops), hook->wait_timeout_);
  hook->check_group_can_carry();
  return hook;
}

// A first step's encoding on this group, from an input of ones: what a
// codec's steps encode into does not change with the data, except for
// IntSGD's first step (exact fp32, then integers; both carried). Every step
// checks its own encoding again (group_allreduce) before anything moves.
void BucketHook::check_group_can_carry() const {
  auto probe = make_codec(spec_, CodecSettings{seed_, 0});
  const std::vector<float> ones(64, 1.0f);
  std::unique_ptr<Encoding> encoding;
  try {
    encoding = probe->encoding_for(1.0, group_->size(), group_->rank(), options_.algorithm, ones);
  } catch (const Error&) {
    return;  // needs a layout or a prepared step: its steps check for themselves
  }
  if (encoding == nullptr) return;
  const bool gathered = probe->aggregation() == Aggregation::allgather_decode;
  if (const std::string refusal = group_refusal(*encoding, gathered, spec_.text());
      !refusal.empty()) {
    throw InvalidArgument(refusal);
  }
}

BucketHook::BucketHook(std::shared_ptr<Context> context, const std::string& spec,
                       std::uint64_t seed, const std::string& algorithm,
                       std::optional<double> timeout_seconds, std::vector<ParameterInfo> parameters)
    : context_(std::move(context)), seed_(seed), parameters_(std::move(parameters)) {
  for (ParameterInfo& p : parameters_) {
    p.elements = 1;
    for (const auto extent : p.shape) p.elements *= static_cast<std::size_t>(extent);
  }
  spec_ = CodecSpec::parse(spec);  // checks the spec
  const auto probe = make_codec(spec_, CodecSettings{seed, 0});
  wants_feedback_ = probe->step_feedback() != nullptr;
  options_.algorithm = parse_algorithm(algorithm);
  wait_timeout_ = timeout_from_seconds(
      timeout_seconds ? *timeout_seconds : context_->timeout_seconds(), "timeout");
  options_.timeout = wait_timeout_;
  if (options_.algorithm == Algorithm::native && !probe->has_native_equivalent()) {
    throw InvalidArgument("'" + spec_.text() + "' runs on ring or halving-doubling, not native (MPI "
                          "sums only fp32 and fp16 values)");
  }
  snapshots_.resize(parameters_.size());
}

// The stream's operations use this hook, so it ends first; no call holds a
// lease here (each holds a reference). An error is dropped, as a destructor
// cannot raise it.
BucketHook::~BucketHook() {
  if (stream_ == nullptr) return;  // create() failed before the stream
  try {
    stream_->close("was deleted");
  } catch (...) {
  }
}

void BucketHook::check_bucket_memory(BucketMemory memory) const {
  if (memory == BucketMemory::host) return;
  if (memory == BucketMemory::cuda && !cuda_buckets_supported()) {
    throw InvalidArgument(cuda_missing("average CUDA gradients in its DDP hook"));
  }
  const auto probe = make_codec(spec_, CodecSettings{seed_, 0});
  if (std::string refusal = probe->device_step_refusal(options_.algorithm, group_ != nullptr);
      !refusal.empty()) {
    throw InvalidArgument("qccl's DDP hook on GPU gradients: " + refusal);
  }
}

// Cheap, on the submitting thread, so a wrong bucket fails in the hook:
// known parameters whose sizes add up to the buffer's.
void BucketHook::check_bucket(const BucketCall& call) const {
  if (call.memory != BucketMemory::host && (call.half || !call.values.empty())) {
    throw InvalidArgument("a device bucket is averaged as fp32, with its optimizer feedback as "
                          "squared norms (a bug in the hook: report it)");
  }
  if (!call.update_norms.empty() && (!wants_feedback_ || call.update_norms.size() != call.parameters.size())) {
    throw InvalidArgument("bucket " + std::to_string(call.index) + " has " +
                          std::to_string(call.parameters.size()) + " parameters but " +
                          std::to_string(call.update_norms.size()) + " update norms (a bug in the "
                          "hook: report it)");
  }
  if (call.half && call.half_chunk == 0) {
    throw InvalidArgument("a half-precision bucket goes in chunks of at least one element: set "
                          "state.half_chunk to a positive count");
  }
  std::size_t elements = 0;
  for (const std::size_t p : call.parameters) {
    if (p >= parameters_.size()) {
      throw InvalidArgument("bucket " + std::to_string(call.index) + " holds parameter " +
                            std::to_string(p) + " of a model with " +
                            std::to_string(parameters_.size()) + ": register the hook on the "
                            "model it was created for");
    }
    elements += parameters_[p].elements;
  }
  if (elements != call.count) {
    throw InvalidArgument("bucket " + std::to_string(call.index) + " has " +
                          std::to_string(call.count) + " gradient elements but its parameters " +
                          std::to_string(elements) + "; the hook supports dense buckets");
  }
}

TensorLayout BucketHook::layout_of(const std::vector<std::size_t>& parameters) const {
  std::vector<TensorSlice> slices;
  std::size_t offset = 0;
  for (const std::size_t p : parameters) {
    slices.push_back({parameters_[p].name, parameters_[p].shape, offset, parameters_[p].elements});
    offset += parameters_[p].elements;
  }
  return TensorLayout(std::move(slices));
}

std::vector<float> BucketHook::update_since_last_call(const BucketCall& call) {
  std::lock_guard lock(snapshots_mutex_);
  std::vector<float> update;
  update.reserve(call.count);
  bool complete = true;
  for (std::size_t i = 0; i < call.parameters.size(); ++i) {
    const std::size_t elements = parameters_[call.parameters[i]].elements;
    const auto* now = reinterpret_cast<const float*>(call.values[i]);
    auto& snapshot = snapshots_[call.parameters[i]];
    if (snapshot.size() == elements) {
      for (std::size_t j = 0; j < elements; ++j) update.push_back(now[j] - snapshot[j]);
    } else {
      complete = false;
    }
    snapshot.assign(now, now + elements);
  }
  if (!complete) update.clear();
  return update;
}

// The layout is built only when the bucket is new or DDP changed what it
// holds (its rebuild after the first iteration), not on every step.
Codec& BucketHook::codec_for(std::size_t bucket, const std::vector<std::size_t>& parameters) {
  auto& entry = codecs_[bucket];
  if (entry.codec == nullptr) {
    entry.codec = make_codec(spec_, CodecSettings{seed_, bucket});
    entry.codec->set_layout(layout_of(parameters), store_);
    entry.parameters = parameters;
    if (const auto loaded = loaded_.find(bucket); loaded != loaded_.end()) {
      entry.codec->load_state(loaded->second.second);
      entry.codec->set_step(loaded->second.first);
      loaded_.erase(loaded);
    }
  } else if (entry.parameters != parameters) {  // DDP rebuilt its buckets
    entry.codec->set_layout(layout_of(parameters), store_);
    entry.parameters = parameters;
  }
  return *entry.codec;
}

void BucketHook::submit(BucketCall call, PythonObject done) {
  if (wants_feedback_ && !call.step_size) {
    throw InvalidArgument("'" + spec_.text() + "' adapts to the optimizer's steps (IntSGD §4): pass "
                          "optimizer=... to qccl.ddp_hook so the hook knows the learning rate");
  }
  const bool on_host = call.memory == BucketMemory::host;
  if (wants_feedback_ && on_host && call.values.size() != call.parameters.size()) {
    throw InvalidArgument("the hook needs the current value of every parameter of the bucket");
  }
  check_bucket(call);
  auto update = wants_feedback_ && on_host ? update_since_last_call(call) : std::vector<float>{};
  const std::string description = "bucket " + std::to_string(call.index);
  if (group_) {
    group_->run(description, [&](Communicator& comm) { average(comm, call, update); });
    return;
  }
  stream_->submit(
      description,
      [this, call = std::move(call), update = std::move(update)](Communicator& comm) {
        average(comm, call, update);
      },
      [done = std::move(done)](const Work& work) {
        const auto failure = work.exception();
        done.call_and_report([&]() -> pybind11::object {
          return failure ? python_exception(failure) : pybind11::none();
        });
      });
}

void BucketHook::average(Communicator& comm, const BucketCall& call,
                         const std::vector<float>& update) {
  if (call.memory != BucketMemory::host) {
    average_on_device(comm, call);
    return;
  }
  if (call.half) {
    average_half(comm, call, update);
    return;
  }
  average_values(comm, call.index, floats_at(call.gradients, call.count), call.parameters,
                 call.step_size, update);
}

// A half-precision bucket, chunk by chunk (parameter_chunks.h): each chunk
// is widened into one fp32 buffer the hook keeps, averaged as a codec step
// of its own — its own codec instance, so the norm and the scales are the
// chunk's — and its mean narrowed back into the bucket, rounded to nearest
// even as PyTorch casts. The fp32 memory is one chunk's, never the bucket's;
// every rank cuts the same chunks, so replicas stay bitwise identical.
void BucketHook::average_half(Communicator& comm, const BucketCall& call,
                              const std::vector<float>& update) {
  std::vector<std::size_t> elements;
  for (const std::size_t p : call.parameters) elements.push_back(parameters_[p].elements);
  auto* bucket = reinterpret_cast<std::uint16_t*>(call.gradients);
  const auto chunks = parameter_chunks(elements, call.half_chunk);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const ParameterChunk& chunk = chunks[k];
    if (half_chunk_.size() < chunk.count) half_chunk_.resize(chunk.count);
    const std::span<float> values(half_chunk_.data(), chunk.count);
    widen_half(*call.half, bucket + chunk.first, values.data(), chunk.count);
    const std::vector<std::size_t> members(call.parameters.begin() + chunk.begin,
                                           call.parameters.begin() + chunk.end);
    const auto chunk_update = update.empty()
                                  ? std::span<const float>()
                                  : std::span<const float>(update).subspan(chunk.first, chunk.count);
    average_values(comm, kHalfChunkCodecs + (call.index << 20) + k, values, members,
                   call.step_size, chunk_update);
    narrow_to_half(*call.half, values.data(), bucket + chunk.first, chunk.count);
  }
}

// A bucket in a device's memory: the codec's device step on it, in place
// (the norm, the encoding and the decoding on the device, only codes
// through host memory). The bucket's codec instance is the one its host
// steps would use, so the step counter and the codes follow the host's.
// Optimizer feedback (IntSGD) arrives as each parameter's squared update,
// summed where the parameters live.
void BucketHook::average_on_device(Communicator& comm, const BucketCall& call) {
  Codec& codec = codec_for(call.index, call.parameters);
  if (!call.update_norms.empty()) {
    codec.step_feedback()->observe_step_norms(*call.step_size, call.update_norms, call.count);
  }
  DeviceStepVector vector(
      DeviceBucket{call.memory, call.gradients, call.count, call.stream, call.device},
      wait_timeout_, device_vectors_);
  codec.allreduce_mean(comm, vector.get(), options_);
  count_step(comm, codec, call.count);
}

void BucketHook::average_values(Communicator& comm, std::size_t codec_index,
                                std::span<float> values, const std::vector<std::size_t>& parameters,
                                std::optional<double> step_size, std::span<const float> update) {
  Codec& codec = codec_for(codec_index, parameters);
  if (!update.empty()) codec.step_feedback()->observe_step(*step_size, update);
  codec.allreduce_mean(comm, values, options_);
  count_step(comm, codec, values.size());
}

void BucketHook::count_step(const Communicator& comm, const Codec& codec, std::size_t elements) {
  const std::uint64_t encoded = codec.wire_bytes(elements);
  elements_reduced_ += elements;
  encoded_bytes_ += encoded;
  if (!group_ && options_.algorithm == Algorithm::native) {  // a ring's 2(n−1)/n of it
    const auto n = static_cast<std::uint64_t>(comm.size());
    native_bytes_ += 2 * (n - 1) * encoded / n;
  }
}

void BucketHook::run_on_stream(const std::string& what,
                               std::function<void(Communicator&)> operation) {
  if (group_) {
    group_->run(what, operation);
    return;
  }
  stream_->submit(what, std::move(operation)).wait(wait_timeout_);
}

// [magic][the shared store][bucket count], then per bucket its index, its
// codec's step and its codec's state; the numbers as uint64, each state as
// its length and bytes (byte_io.h).
std::vector<std::byte> BucketHook::save_state() {
  ByteWriter out;
  run_on_stream("saving the hook's state", [&](Communicator&) {
    out.value<std::uint64_t>(kStateMagic);
    out.values(store_->save());
    out.value<std::uint64_t>(codecs_.size() + loaded_.size());
    for (const auto& [bucket, entry] : codecs_) {
      out.value<std::uint64_t>(bucket);
      out.value<std::uint64_t>(entry.codec->step());
      out.values(entry.codec->save_state());
    }
    for (const auto& [bucket, loaded] : loaded_) {  // loaded, not yet used
      out.value<std::uint64_t>(bucket);
      out.value<std::uint64_t>(loaded.first);
      out.values(loaded.second);
    }
  });
  return out.take();
}

void BucketHook::load_state(std::vector<std::byte> bytes) {
  run_on_stream("loading the hook's state", [&](Communicator&) {
    if (!codecs_.empty()) {
      throw InvalidArgument("load the DDP hook's state before the first backward pass");
    }
    ByteReader in(bytes, "the DDP hook state",
                  "load the bytes that state_dict() returned, unchanged");
    if (in.value<std::uint64_t>("the header") != kStateMagic) {
      throw InvalidArgument("these bytes are not a qccl DDP hook state (state_dict()['native'])");
    }
    const auto store = in.values<std::byte>("the codecs' shared state");
    std::map<std::size_t, std::pair<std::uint64_t, std::vector<std::byte>>> loaded;
    for (auto n = in.value<std::uint64_t>("the bucket count"); n > 0; --n) {
      const auto bucket = in.value<std::uint64_t>("a bucket index");
      const auto step = in.value<std::uint64_t>("a codec step");
      loaded[bucket] = {step, in.values<std::byte>("a codec state")};
    }
    if (!in.done()) throw InvalidArgument("the DDP hook state has trailing bytes: it is corrupt");
    store_->load(store);
    loaded_ = std::move(loaded);
  });
}

}  // namespace qccl::python
