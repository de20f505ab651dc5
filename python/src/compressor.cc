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

// The group moves whole vectors by its own collectives, whatever the
// algorithm: only the default (ring) is taken, so a setting that would
// choose qccl's own schedules is not silently ignored.
Compressor::Compressor(std::shared_ptr<GroupRunner> group, const std::string& spec,
                       std::uint64_t seed, const std::string& algorithm,
                       std::optional<double> timeout_seconds)
    : group_(std::move(group)), codec_(make_codec(spec, CodecSettings{seed, 0})), spec_(codec_->spec()) {
  if (parse_algorithm(algorithm) != Algorithm::ring) {
    throw InvalidArgument("algorithm='" + algorithm + "' chooses qccl's own collectives, which "
                          "run in the MPI mode (mpirun); in the process-group mode (torchrun) "
                          "the group's collectives move the data: leave the algorithm out");
  }
  if (timeout_seconds) options_.timeout = timeout_from_seconds(*timeout_seconds, "timeout");
}

Timeout Compressor::timeout() const {
  return options_.timeout.value_or(group_ ? group_->timeout() : context_->timeout());
}

void Compressor::on_world(const std::string& what,
                          const std::function<void(Communicator&)>& operation) {
  if (group_) {
    group_->run(what + " (" + spec_ + ")", operation, timeout());
    return;
  }
  auto world = context_->use_world(what + " (" + spec_ + ")", timeout());
  operation(world.communicator());
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
  for (const Range& r : codec_->reduce_scatter_blocks(count, world_size())) {
    result.emplace_back(r.first, r.count);
  }
  return result;
}

double Compressor::error_bound(double inf_norm) {
  const auto held = hold_codec("Compressor.error_bound");
  return codec_->error_bound(inf_norm, world_size(), options_.algorithm,
                             CodecOperation::allreduce_mean);
}

// The codec first, then the world communicator: every call takes them in
// this order, so two threads never hold one each while waiting for the other.
void Compressor::allreduce_mean(std::uintptr_t data, std::size_t count) {
  const std::string what = "allreduce_mean_";
  const auto held = hold_codec(what);
  on_world(what, [&](Communicator& comm) {
    codec_->allreduce_mean(comm, floats_at(data, count), options_);
  });
}

void Compressor::allreduce_mean_on_device(const DeviceBucket& data) {
  const std::string what = "allreduce_mean_";
  const auto held = hold_codec(what);
  on_world(what, [&](Communicator& comm) {
    DeviceStepVector vector(data, timeout(), device_vectors_);
    codec_->allreduce_mean(comm, vector.get(), options_);
  });
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
  on_world(what, [&](Communicator& comm) {
    DeviceStepVector in(input, timeout(), device_vectors_);
    DeviceStepVector out(output, timeout(), output_vectors_);
    if (gather) {
      codec_->allgather(comm, in.get(), out.get(), options_);
    } else {
      codec_->reduce_scatter_mean(comm, in.get(), out.get(), options_);
    }
  });
}

void Compressor::reduce_scatter_mean(std::uintptr_t input, std::size_t count,
                                     std::uintptr_t output, std::size_t output_count) {
  const std::string what = "reduce_scatter_mean";
  const auto held = hold_codec(what);
  on_world(what, [&](Communicator& comm) {
    codec_->reduce_scatter_mean(comm, floats_at(input, count), floats_at(output, output_count),
                                options_);
  });
}

void Compressor::allgather(std::uintptr_t shard, std::size_t count, std::uintptr_t output,
                           std::size_t output_count) {
  const std::string what = "allgather";
  const auto held = hold_codec(what);
  on_world(what, [&](Communicator& comm) {
    codec_->allgather(comm, floats_at(shard, count), floats_at(output, output_count), options_);
  });
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
