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
                                  "fp16", "fp32", "intsgd-heuristic", "intsgd"};

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

// One step of `spec` on every rank, on device data (one stream per rank)
// or on host data: the allreduce mean, or the reduce-scatter mean (rank r's
// block). Returns each rank's result and the slowest step's time.
PerRank run_step(const char* spec, const PerRank& inputs, bool reduce_scatter, bool on_device,
                 double* slowest_ms) {
  PerRank results(inputs.size());
  std::vector<double> ms(inputs.size());
  run_in_process(static_cast<int>(inputs.size()), [&](Transport& transport) {
    Communicator comm(transport, CommunicatorOptions{std::chrono::seconds(120), true});
    const auto r = static_cast<std::size_t>(comm.rank());
    auto codec = row_codec(spec, inputs[r].size());
    const Range mine = codec->reduce_scatter_blocks(inputs[r].size(), comm.size())[r];
    results[r] = reduce_scatter ? std::vector<float>(mine.count) : inputs[r];
    if (!on_device) {
      if (reduce_scatter) {
        codec->reduce_scatter_mean(comm, inputs[r], results[r]);
      } else {
        codec->allreduce_mean(comm, std::span<float>(results[r]));
      }
      return;
    }
    const CudaStream stream;
    DeviceBuffer<float> values(inputs[r], stream.get());
    DeviceBuffer<float> block(reduce_scatter ? mine.count : 0);
    CudaVector vector(values.data(), values.size(), stream.get());
    CudaVector block_vector(block.data(), block.size(), stream.get());
    const auto start = std::chrono::steady_clock::now();
    if (reduce_scatter) {
      codec->reduce_scatter_mean(comm, vector, block_vector);
    } else {
      codec->allreduce_mean(comm, vector);
    }
    ms[r] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    results[r] = (reduce_scatter ? block : values).to_host(stream.get());
  });
  if (slowest_ms != nullptr) *slowest_ms = *std::max_element(ms.begin(), ms.end());
  return results;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

DeviceRanksRow check_step(const char* spec, const PerRank& inputs, bool reduce_scatter,
                          const std::vector<double>& mean, double inf_norm) {
  const int ranks = static_cast<int>(inputs.size());
  DeviceRanksRow row{.spec = spec, .operation = reduce_scatter ? "reduce-scatter" : "allreduce",
                     .ranks = ranks};
  const PerRank device = run_step(spec, inputs, reduce_scatter, true, &row.step_ms);
  const PerRank host = run_step(spec, inputs, reduce_scatter, false, nullptr);
  row.identical_across_ranks = reduce_scatter || std::all_of(device.begin(), device.end(), [&](const auto& v) {
                                 return same_bytes(v, device[0]);
                               });
  row.equals_host_step = true;
  const auto codec = row_codec(spec, mean.size());
  const auto blocks = codec->reduce_scatter_blocks(mean.size(), ranks);
  for (std::size_t r = 0; r < device.size(); ++r) {
    row.equals_host_step = row.equals_host_step && same_bytes(device[r], host[r]);
    const std::size_t first = reduce_scatter ? blocks[r].first : 0;
    for (std::size_t i = 0; i < device[r].size(); ++i) {
      row.max_error = std::max(row.max_error, std::abs(device[r][i] - mean[first + i]));
    }
  }
  row.bound = codec->error_bound(
      inf_norm, ranks, Algorithm::ring,
      reduce_scatter ? CodecOperation::reduce_scatter_mean : CodecOperation::allreduce_mean);
  return row;
}

}  // namespace

std::vector<DeviceRanksRow> check_ranks_on_one_gpu(int ranks, std::size_t count) {
  PerRank inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(rank_input(r, count));
  double inf_norm = 0;
  std::vector<double> mean(count, 0.0);
  for (const auto& x : inputs) {
    for (std::size_t i = 0; i < count; ++i) {
      mean[i] += static_cast<double>(x[i]) / ranks;
      inf_norm = std::max(inf_norm, std::abs(static_cast<double>(x[i])));
    }
  }
  std::vector<DeviceRanksRow> rows;
  for (const bool reduce_scatter : {false, true}) {
    for (const char* spec : kSpecs) rows.push_back(check_step(spec, inputs, reduce_scatter, mean, inf_norm));
  }
  return rows;
}

}  // namespace qccl::tools
