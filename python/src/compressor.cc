#include "compressor.h"

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::python {

std::span<float> floats_at(std::uintptr_t address, std::size_t count) {
  if (count == 0) return {};
  return {reinterpret_cast<float*>(address), count};
}

Compressor::Compressor(std::shared_ptr<Context> context, const std::string& spec,
                       std::uint64_t seed, const std::string& algorithm,
                       std::optional<double> timeout_seconds)
    : context_(std::move(context)),
      codec_(make_codec(spec, CodecSettings{seed, 0})),
      spec_(codec_->spec()) {
  options_.algorithm = parse_algorithm(algorithm);
  if (timeout_seconds) options_.timeout = timeout_from_seconds(*timeout_seconds, "timeout");
}

Lifecycle::Lease Compressor::hold_codec(const std::string& what) {
  return codec_use_.enter(what + " (" + spec_ + ")", timeout(), true, "");
}

std::uint64_t Compressor::step() {
  const auto held = hold_codec("Compressor.state_dict");
  return codec_->step();
}

std::vector<std::pair<std::size_t, std::size_t>> Compressor::blocks(std::size_t count) {
  const auto held = hold_codec("Compressor.blocks");
  std::vector<std::pair<std::size_t, std::size_t>> result;
  for (const Range& r : codec_->reduce_scatter_blocks(count, context_->size())) {
    result.emplace_back(r.first, r.count);
  }
  return result;
}

double Compressor::error_bound(double inf_norm) {
  const auto held = hold_codec("Compressor.error_bound");
  return codec_->error_bound(inf_norm, context_->size(), options_.algorithm,
                             CodecOperation::allreduce_mean);
}

// The codec first, then the world communicator: every call takes them in
// this order, so two threads never hold one each while waiting for the other.
void Compressor::allreduce_mean(std::uintptr_t data, std::size_t count) {
  const std::string what = "allreduce_mean_";
  const auto held = hold_codec(what);
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  codec_->allreduce_mean(world.communicator(), floats_at(data, count), options_);
}

void Compressor::allreduce_mean_on_device(const DeviceBucket& data) {
  const std::string what = "allreduce_mean_";
  const auto held = hold_codec(what);
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  DeviceStepVector vector(data, timeout(), device_vectors_);
  codec_->allreduce_mean(world.communicator(), vector.get(), options_);
}

void Compressor::step_on_device(CodecOperation kind, const DeviceBucket& input,
                                const DeviceBucket& output) {
  if (kind == CodecOperation::allreduce_mean) {
    throw InvalidArgument("step_on_device runs a reduce-scatter mean or an allgather (a bug in "
                          "qccl's Python package: report it)");
  }
  const bool gather = kind == CodecOperation::allgather;
  const std::string what = gather ? "allgather" : "reduce_scatter_mean";
  const auto held = hold_codec(what);
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  DeviceStepVector in(input, timeout(), device_vectors_);
  DeviceStepVector out(output, timeout(), output_vectors_);
  if (gather) {
    codec_->allgather(world.communicator(), in.get(), out.get(), options_);
  } else {
    codec_->reduce_scatter_mean(world.communicator(), in.get(), out.get(), options_);
  }
}

void Compressor::reduce_scatter_mean(std::uintptr_t input, std::size_t count,
                                     std::uintptr_t output, std::size_t output_count) {
  const std::string what = "reduce_scatter_mean";
  const auto held = hold_codec(what);
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  codec_->reduce_scatter_mean(world.communicator(), floats_at(input, count),
                              floats_at(output, output_count), options_);
}

void Compressor::allgather(std::uintptr_t shard, std::size_t count, std::uintptr_t output,
                           std::size_t output_count) {
  const std::string what = "allgather";
  const auto held = hold_codec(what);
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  codec_->allgather(world.communicator(), floats_at(shard, count),
                    floats_at(output, output_count), options_);
}

std::vector<std::byte> Compressor::save_state() {
  const auto held = hold_codec("Compressor.state_dict");
  return codec_->save_state();
}

void Compressor::load_state(std::span<const std::byte> state, std::uint64_t step) {
  const auto held = hold_codec("Compressor.load_state_dict");
  codec_->load_state(state);
  codec_->set_step(step);
}

}  // namespace qccl::python
