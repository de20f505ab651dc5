#include "qccl/tools/device_ranks_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <span>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/cuda_vector.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/common/counter_rng.h"
#include "qccl/transport/local_transport.h"

namespace qccl::tools {
namespace {

constexpr const char* kSpecs[] = {"global-qsgd:bits=8", "global-qsgd:bits=4", "global-qsgd:dither=exp",
                                  "fp16"};

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
// or on host data; returns each rank's result and the slowest step's time.
PerRank run_step(const char* spec, const PerRank& inputs, bool on_device, double* slowest_ms) {
  PerRank results(inputs.size());
  std::vector<double> ms(inputs.size());
  run_in_process(static_cast<int>(inputs.size()), [&](Transport& transport) {
    Communicator comm(transport, CommunicatorOptions{std::chrono::seconds(120), true});
    const auto r = static_cast<std::size_t>(comm.rank());
    auto codec = make_codec(spec, CodecSettings{.seed = 11, .bucket = 1});
    results[r] = inputs[r];
    if (!on_device) {
      codec->allreduce_mean(comm, std::span<float>(results[r]));
      return;
    }
    cudaStream_t stream;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    {
      DeviceBuffer<float> values(inputs[r], stream);
      CudaVector vector(values.data(), values.size(), stream);
      const auto start = std::chrono::steady_clock::now();
      codec->allreduce_mean(comm, vector);
      ms[r] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      results[r] = values.to_host(stream);
    }
    cudaStreamDestroy(stream);
  });
  if (slowest_ms != nullptr) *slowest_ms = *std::max_element(ms.begin(), ms.end());
  return results;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
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
  for (const char* spec : kSpecs) {
    DeviceRanksRow row{.spec = spec, .ranks = ranks};
    const PerRank device = run_step(spec, inputs, true, &row.step_ms);
    const PerRank host = run_step(spec, inputs, false, nullptr);
    row.identical_across_ranks = std::all_of(device.begin(), device.end(),
                                             [&](const auto& v) { return same_bytes(v, device[0]); });
    row.equals_host_step = same_bytes(device[0], host[0]);
    for (std::size_t i = 0; i < count; ++i) {
      row.max_error = std::max(row.max_error, std::abs(device[0][i] - mean[i]));
    }
    row.bound = make_codec(spec)->max_abs_error(inf_norm, ranks, Algorithm::ring);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace qccl::tools
