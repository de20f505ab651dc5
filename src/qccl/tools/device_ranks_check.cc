#include "qccl/tools/device_ranks_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <span>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/cuda_stream.h"
#include "qccl/codecs/device/cuda_vector.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/tensor_layout.h"
#include "qccl/collectives/communicator.h"
#include "qccl/common/counter_rng.h"
#include "qccl/transport/local_transport.h"

namespace qccl::tools {
namespace {

constexpr const char* kSpecs[] = {"global-qsgd:bits=8", "global-qsgd:bits=4", "global-qsgd:dither=exp",
                                  "fp16", "fp32", "intsgd-heuristic", "intsgd", "intsgd:wire=int32",
                                  "intsgd:wire=int64", "minmax", "minmax:bits=4,rounding=shift",
                                  "minmax:bucket=0"};

// The codec of a row. IntSGD's adaptive scheme gets a layout of three
// tensors and one optimizer update first, so that its step is an integer
// one with a scale per tensor (its first step would be exact fp32).
std::unique_ptr<Codec> row_codec(const char* spec, std::size_t count) {
  auto codec = make_codec(spec, CodecSettings{.seed = 11, .bucket = 1});
  if (StepFeedback* feedback = codec->step_feedback()) {
    const std::size_t third = count / 3;
    const std::vector<std::size_t> sizes{third, third, count - 2 * third};
    codec->set_layout(TensorLayout::of_sizes(sizes));
    const CounterRng rng(5, 0, 0, 0, RngStream::data);
    std::vector<float> update(count);
    for (std::size_t i = 0; i < count; ++i) update[i] = 1e-3f * (rng.uniform(i) * 2 - 1);
    feedback->observe_step(0.05, update);
  }
  return codec;
}

// Rank r's values: uniform in [-1, 1] times 2^(i mod 9 − 4) (fp16 can carry
// their mean).
std::vector<float> rank_input(int rank, std::size_t count) {
  const CounterRng rng(3, 0, 0, static_cast<std::uint64_t>(rank), RngStream::data);
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = (rng.uniform(i) * 2 - 1) * std::ldexp(1.0f, static_cast<int>(i % 9) - 4);
  }
  return v;
}

using PerRank = std::vector<std::vector<float>>;

enum class RowOperation { allreduce, reduce_scatter, allgather };

const char* name_of(RowOperation operation) {
  switch (operation) {
    case RowOperation::allreduce: return "allreduce";
    case RowOperation::reduce_scatter: return "reduce-scatter";
    case RowOperation::allgather: return "allgather";
  }
  return "?";
}

// Rank r's input to the operation: its whole vector, or for the allgather
// its shard, the first 1/n of it.
std::vector<float> operation_input(RowOperation operation, const std::vector<float>& x, int ranks) {
  if (operation != RowOperation::allgather) return x;
  return {x.begin(), x.begin() + static_cast<std::ptrdiff_t>(x.size() / static_cast<std::size_t>(ranks))};
}

// One step of `spec` on every rank, on device data (one stream per rank)
// or on host data: the allreduce mean, the reduce-scatter mean (rank r's
// block) or the allgather of the shards. Returns each rank's result and
// the slowest step's time.
PerRank run_step(const char* spec, const PerRank& inputs, RowOperation operation, bool on_device,
                 double* slowest_ms) {
  PerRank results(inputs.size());
  std::vector<double> ms(inputs.size());
  const int ranks = static_cast<int>(inputs.size());
  run_in_process(ranks, [&](Transport& transport) {
    Communicator comm(transport, CommunicatorOptions{std::chrono::seconds(120), true});
    const auto r = static_cast<std::size_t>(comm.rank());
    const std::vector<float> input = operation_input(operation, inputs[r], ranks);
    auto codec = row_codec(spec, input.size());
    const Range mine = codec->reduce_scatter_blocks(input.size(), ranks)[r];
    const std::size_t output_size = operation == RowOperation::reduce_scatter ? mine.count
                                    : operation == RowOperation::allgather
                                        ? input.size() * static_cast<std::size_t>(ranks)
                                        : input.size();
    results[r] = operation == RowOperation::allreduce ? input : std::vector<float>(output_size);
    if (!on_device) {
      switch (operation) {
        case RowOperation::allreduce: codec->allreduce_mean(comm, std::span<float>(results[r])); break;
        case RowOperation::reduce_scatter: codec->reduce_scatter_mean(comm, input, results[r]); break;
        case RowOperation::allgather: codec->allgather(comm, input, results[r]); break;
      }
      return;
    }
    const CudaStream stream;
    DeviceBuffer<float> values(input, stream.get());
    DeviceBuffer<float> output(operation == RowOperation::allreduce ? 0 : output_size);
    CudaVector vector(values.data(), values.size(), stream.get());
    CudaVector output_vector(output.data(), output.size(), stream.get());
    const auto start = std::chrono::steady_clock::now();
    switch (operation) {
      case RowOperation::allreduce: codec->allreduce_mean(comm, vector); break;
      case RowOperation::reduce_scatter: codec->reduce_scatter_mean(comm, vector, output_vector); break;
      case RowOperation::allgather: codec->allgather(comm, vector, output_vector); break;
    }
    ms[r] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    results[r] = (operation == RowOperation::allreduce ? values : output).to_host(stream.get());
  });
  if (slowest_ms != nullptr) *slowest_ms = *std::max_element(ms.begin(), ms.end());
  return results;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The exact result rank r should approach: the mean (its block, for the
// reduce-scatter) or every rank's shard.
std::vector<double> exact_result(RowOperation operation, const PerRank& inputs, std::size_t r,
                                 std::span<const Range> blocks) {
  const int ranks = static_cast<int>(inputs.size());
  std::vector<double> exact;
  if (operation == RowOperation::allgather) {
    for (const auto& x : inputs) {
      for (float v : operation_input(operation, x, ranks)) exact.push_back(v);
    }
    return exact;
  }
  const std::size_t count = inputs[0].size();
  exact.assign(count, 0.0);
  for (const auto& x : inputs) {
    for (std::size_t i = 0; i < count; ++i) exact[i] += static_cast<double>(x[i]) / ranks;
  }
  if (operation == RowOperation::allreduce) return exact;
  const Range block = blocks[r];
  return {exact.begin() + static_cast<std::ptrdiff_t>(block.first),
          exact.begin() + static_cast<std::ptrdiff_t>(block.first + block.count)};
}

DeviceRanksRow check_step(const char* spec, const PerRank& inputs, RowOperation operation,
                          double inf_norm) {
  const int ranks = static_cast<int>(inputs.size());
  DeviceRanksRow row{.spec = spec, .operation = name_of(operation), .ranks = ranks};
  const PerRank device = run_step(spec, inputs, operation, true, &row.step_ms);
  const PerRank host = run_step(spec, inputs, operation, false, nullptr);
  row.identical_across_ranks = operation == RowOperation::reduce_scatter ||
                               std::all_of(device.begin(), device.end(), [&](const auto& v) {
                                 return same_bytes(v, device[0]);
                               });
  row.equals_host_step = true;
  const auto codec = row_codec(spec, inputs[0].size());
  const auto blocks = codec->reduce_scatter_blocks(inputs[0].size(), ranks);
  for (std::size_t r = 0; r < device.size(); ++r) {
    row.equals_host_step = row.equals_host_step && same_bytes(device[r], host[r]);
    const auto exact = exact_result(operation, inputs, r, blocks);
    for (std::size_t i = 0; i < device[r].size(); ++i) {
      row.max_error = std::max(row.max_error, std::abs(device[r][i] - exact[i]));
    }
  }
  const CodecOperation kind = operation == RowOperation::allreduce        ? CodecOperation::allreduce_mean
                              : operation == RowOperation::reduce_scatter ? CodecOperation::reduce_scatter_mean
                                                                          : CodecOperation::allgather;
  row.bound = codec->error_bound(inf_norm, ranks, Algorithm::ring, kind);
  return row;
}

}  // namespace

std::vector<DeviceRanksRow> check_ranks_on_one_gpu(int ranks, std::size_t count) {
  PerRank inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(rank_input(r, count));
  double inf_norm = 0;
  for (const auto& x : inputs) {
    for (float v : x) inf_norm = std::max(inf_norm, std::abs(static_cast<double>(v)));
  }
  std::vector<DeviceRanksRow> rows;
  for (const RowOperation operation :
       {RowOperation::allreduce, RowOperation::reduce_scatter, RowOperation::allgather}) {
    for (const char* spec : kSpecs) {
      if (operation == RowOperation::allgather && !make_codec(spec)->traits().operations.allgather) continue;
      rows.push_back(check_step(spec, inputs, operation, inf_norm));
    }
  }
  return rows;
}

}  // namespace qccl::tools
