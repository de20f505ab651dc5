// qccl-device-check: the device codecs against the CPU codecs on a CUDA GPU,
// one table. For each kernel, on 1 MiB and 64 MiB of fp32 input (two
// ranks' worth, values over 40 binades), the device's output bytes against
// the CPU kernels' (kernels.h) for the same keys and counters; and each
// codec's encode + decode throughput on the device next to a
// device-to-device copy of the same input bytes timed in the same run; and
// 4 in-process ranks sharing the GPU, one step of each device codec
// (device_ranks_check.h).
//
// Exit status: 0 when every kernel is byte-identical, 1 when one is not, 2
// when no CUDA device can be used (the message says why), so a machine
// without a GPU learns so clearly instead of failing in a kernel.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/device_buffer.h"
#include "qccl/codecs/device/device_kernels.h"
#include "qccl/tools/device_cases.h"
#include "qccl/tools/device_ranks_check.h"

namespace qccl::tools {
namespace {

// Median time of `run` (enqueued on `stream`) over `repeats` timed runs
// after two untimed ones, in seconds.
template <class Run>
double median_seconds(cudaStream_t stream, int repeats, Run run) {
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) run();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    wait_for_stream(stream, kDeviceTimeout, "a timed run");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The first byte where two outputs differ, or -1.
long first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  if (a.size() != b.size()) return 0;
  const auto at = std::mismatch(a.begin(), a.end(), b.begin());
  return at.first == a.end() ? -1 : static_cast<long>(at.first - a.begin());
}

int check_identity(std::size_t bytes, cudaStream_t stream) {
  const DeviceCaseInputs inputs(bytes / sizeof(float), stream);
  int failures = 0;
  for (const DeviceCase& c : device_cases()) {
    const auto cpu = cpu_reference(c.kind, inputs.host);
    const auto device = c.device(inputs, stream);
    const long at = first_difference(cpu, device);
    std::printf("| identical | %-28s | %6zu MiB | %s |\n", c.name.c_str(), bytes >> 20,
                at < 0 ? "yes" : ("NO: first difference at byte " + std::to_string(at)).c_str());
    failures += at >= 0;
  }
  return failures;
}

// 4 in-process ranks on this GPU, 16 MiB of fp32 each: one step per codec
// and operation.
int check_ranks() {
  int failures = 0;
  for (const DeviceRanksRow& row : check_ranks_on_one_gpu(4, std::size_t{4} << 20)) {
    const bool within = row.max_error <= row.bound;
    std::printf("| %d ranks, one GPU | %-14s | %-22s | ranks identical: %s | = host step: %s | "
                "max error %.3g, bound %.3g: %s | step %.2f ms |\n",
                row.ranks, row.operation.c_str(), row.spec.c_str(),
                row.operation != "reduce-scatter" ? (row.identical_across_ranks ? "yes" : "NO") : "n/a",
                row.equals_host_step ? "yes" : "NO", row.max_error, row.bound, within ? "within" : "BEYOND",
                row.step_ms);
    failures += !row.identical_across_ranks || !row.equals_host_step || !within;
  }
  return failures;
}

void measure_throughput(std::size_t bytes, cudaStream_t stream) {
  const DeviceCaseInputs inputs(bytes / sizeof(float), stream);
  DeviceBuffer<float> copy(inputs.count);
  const double copy_s = median_seconds(stream, 20, [&] {
    check_cuda(cudaMemcpyAsync(copy.data(), inputs.device.x.data(), bytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync");
  });
  for (const DeviceCodecTiming& codec : device_codec_timings()) {
    const auto run = codec.prepare(inputs, stream);
    const double seconds = median_seconds(stream, 20, run);
    std::printf("| throughput | %-27s | %6zu MiB | %7.1f GB/s | copy %7.1f GB/s | %.2fx copy |\n",
                codec.name.c_str(), bytes >> 20, bytes / seconds * 1e-9, bytes / copy_s * 1e-9,
                copy_s / seconds);
  }
}

int run() {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0) {
    std::fprintf(stderr,
                 "qccl-device-check: no CUDA device can be used (%s); run it on a machine with "
                 "an NVIDIA GPU and a driver for CUDA %d.%d or newer\n",
                 found != cudaSuccess ? cudaGetErrorString(found) : "none found",
                 CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    return 2;
  }
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::printf("device: %s, sm_%d%d, %d multiprocessors, %.1f GiB\n", properties.name,
              properties.major, properties.minor, properties.multiProcessorCount,
              properties.totalGlobalMem / 1073741824.0);
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  int failures = 0;
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{64} << 20}) {
    failures += check_identity(bytes, stream);
  }
  failures += check_ranks();
  measure_throughput(std::size_t{64} << 20, stream);
  cudaStreamDestroy(stream);
  std::printf("%s\n", failures == 0 ? "every device kernel and step is byte-identical to the CPU's"
                                    : "SOME DEVICE KERNELS OR STEPS DIFFER FROM THE CPU'S");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace qccl::tools

int main() {
  try {
    return qccl::tools::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qccl-device-check: %s\n", e.what());
    return 2;
  }
}
