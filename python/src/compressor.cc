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
    : context_(std::move(context)), codec_(make_codec(spec, CodecSettings{seed, 0})) {
  options_.algorithm = parse_algorithm(algorithm);
  if (timeout_seconds) options_.timeout = timeout_from_seconds(*timeout_seconds, "timeout");
}

std::vector<std::pair<std::size_t, std::size_t>> Compressor::blocks(std::size_t count) const {
  std::vector<std::pair<std::size_t, std::size_t>> result;
  for (const Range& r : codec_->reduce_scatter_blocks(count, context_->size())) {
    result.emplace_back(r.first, r.count);
  }
  return result;
}

double Compressor::error_bound(double inf_norm) const {
  return codec_->error_bound(inf_norm, context_->size(), options_.algorithm,
                             CodecOperation::allreduce_mean);
}

void Compressor::allreduce_mean(std::uintptr_t data, std::size_t count) {
  codec_->allreduce_mean(context_->communicator(), floats_at(data, count), options_);
}

void Compressor::reduce_scatter_mean(std::uintptr_t input, std::size_t count,
                                     std::uintptr_t output, std::size_t output_count) {
  codec_->reduce_scatter_mean(context_->communicator(), floats_at(input, count),
                              floats_at(output, output_count), options_);
}

void Compressor::allgather(std::uintptr_t shard, std::size_t count, std::uintptr_t output,
                           std::size_t output_count) {
  codec_->allgather(context_->communicator(), floats_at(shard, count),
                    floats_at(output, output_count), options_);
}

void Compressor::load_state(std::span<const std::byte> state, std::uint64_t step) {
  codec_->load_state(state);
  codec_->set_step(step);
}

}  // namespace qccl::python
