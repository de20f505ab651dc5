// One codec instance on the context's world communicator, for the
// collectives Python calls directly (qccl.allreduce_mean_ and its
// counterparts): its state — the step counter that keys the random
// rounding, error-feedback residuals, IntSGD's scales — persists across
// calls. Buffers arrive as (address, element count) of fp32 memory that the
// Python side has checked (CPU, float32, contiguous) and keeps alive for the
// call. Each call releases the GIL while data moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "context.h"
#include "qccl/codecs/codec.h"

namespace qccl::python {

class Compressor {
 public:
  Compressor(std::shared_ptr<Context> context, const std::string& spec, std::uint64_t seed,
             const std::string& algorithm, std::optional<double> timeout_seconds);

  std::string spec() const { return codec_->spec(); }
  std::uint64_t step() const { return codec_->step(); }
  // (first, count) of each rank's block of a `count`-element vector.
  std::vector<std::pair<std::size_t, std::size_t>> blocks(std::size_t count) const;

  // A bound that |result − exact mean| never exceeds for any element of an
  // allreduce whose inputs have the global ∞-norm `inf_norm` (infinity
  // where the codec has none).
  double error_bound(double inf_norm) const;

  void allreduce_mean(std::uintptr_t data, std::size_t count);
  void reduce_scatter_mean(std::uintptr_t input, std::size_t count, std::uintptr_t output,
                           std::size_t output_count);
  void allgather(std::uintptr_t shard, std::size_t count, std::uintptr_t output,
                 std::size_t output_count);

  // Checkpoints: the codec's state and its step.
  std::vector<std::byte> save_state() const { return codec_->save_state(); }
  void load_state(std::span<const std::byte> state, std::uint64_t step);

 private:
  std::shared_ptr<Context> context_;
  std::unique_ptr<Codec> codec_;
  CollectiveOptions options_;
};

// The fp32 elements at `address`, `count` of them.
std::span<float> floats_at(std::uintptr_t address, std::size_t count);

}  // namespace qccl::python
