// One codec instance on the context's world communicator, for the
// collectives Python calls directly (qccl.allreduce_mean_ and its
// counterparts): its state — the step counter that keys the random
// rounding, error-feedback residuals, IntSGD's scales — persists across
// calls. Buffers arrive as (address, element count) of fp32 memory that the
// Python side has checked (CPU, float32, contiguous) and keeps alive for the
// call.
//
// Its collectives run on the context's world communicator (context.h; the
// MPI mode) or, in the process-group mode, on the process group's runner
// (group_runner.h), which every compressor of the process shares: the
// codec's data then moves by the group's whole-vector collectives
// (group_data_path.h).
//
// Threads may share a compressor: each call holds the codec exclusively
// (its state changes with every step) and, for a collective, the world
// communicator (or the group's runner), waiting for another thread's call
// up to the compressor's timeout. Call every method without the GIL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "context.h"
#include "device_bucket.h"
#include "group_runner.h"
#include "qccl/codecs/codec.h"

namespace qccl::python {

class Compressor {
 public:
  Compressor(std::shared_ptr<Context> context, const std::string& spec, std::uint64_t seed,
             const std::string& algorithm, std::optional<double> timeout_seconds);
  // The same on a process group's runner (the process-group mode).
  Compressor(std::shared_ptr<GroupRunner> group, const std::string& spec, std::uint64_t seed,
             const std::string& algorithm, std::optional<double> timeout_seconds);

  std::string spec() const { return spec_; }
  std::uint64_t step();
  // (first, count) of each rank's block of a `count`-element vector.
  std::vector<std::pair<std::size_t, std::size_t>> blocks(std::size_t count);

  // A bound that |result − exact mean| never exceeds for any element of an
  // allreduce whose inputs have the global ∞-norm `inf_norm` (infinity
  // where the codec has none).
  double error_bound(double inf_norm);

  void allreduce_mean(std::uintptr_t data, std::size_t count);
  // The same on a vector in a device's memory (device_bucket.h): the
  // codec's device step, with only codes through host memory.
  void allreduce_mean_on_device(const DeviceBucket& data);
  void reduce_scatter_mean(std::uintptr_t input, std::size_t count, std::uintptr_t output,
                           std::size_t output_count);
  void allgather(std::uintptr_t shard, std::size_t count, std::uintptr_t output,
                 std::size_t output_count);
  // One of those two (`kind`) on vectors in one device's memory (both on
  // `input`'s stream and device): the codec's device step.
  void step_on_device(CodecOperation kind, const DeviceBucket& input, const DeviceBucket& output);

  // Checkpoints: the codec's state and its step.
  std::vector<std::byte> save_state();
  void load_state(std::span<const std::byte> state, std::uint64_t step);

 private:
  // The codec for the call `what`, this thread's until the lease ends.
  Lifecycle::Lease hold_codec(const std::string& what);
  Timeout timeout() const;
  int world_size() const { return group_ ? group_->size() : context_->size(); }
  // Runs `operation` (the call `what`) on the world communicator or the
  // group's, after any other thread's call there.
  void on_world(const std::string& what, const std::function<void(Communicator&)>& operation);

  std::shared_ptr<Context> context_;  // the MPI mode
  std::shared_ptr<GroupRunner> group_;  // the process-group mode
  std::unique_ptr<Codec> codec_;
  std::string spec_;
  CollectiveOptions options_;
  // The device steps' vectors (the input's, and a second operation's
  // output), while a call holds the codec.
  DeviceVectorCache device_vectors_, output_vectors_;
  Lifecycle codec_use_{"this Compressor", "this Compressor's codec"};  // never closed
};

// The fp32 elements at `address`, `count` of them.
std::span<float> floats_at(std::uintptr_t address, std::size_t count);

}  // namespace qccl::python
