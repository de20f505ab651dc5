// A program outside qccl's tree that depends on the installed device
// library: two in-process ranks share the first GPU, each with its values
// in device memory and a stream of its own, and average them with a
// Global-QSGD 8-bit allreduce whose encoding and decoding run on the GPU
// (qccl::CudaVector). Checked: every rank ends with the same bits, within
// the codec's error bound of the exact mean.
// On a machine without a usable GPU it checks what it can: the library
// loads, and a CudaVector is refused with qccl's own exception (caught by
// its type across the library boundary) naming the CUDA call that failed.
// Exits 0 only if every check held.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "qccl/codecs/device/cuda_vector.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/common/errors.h"
#include "qccl/transport/local_transport.h"

namespace {

constexpr int kRanks = 2;
constexpr std::size_t kCount = std::size_t{1} << 18;

// Rank r holds (r + 1)·v; the mean over ranks is (n + 1)/2·v.
double base_value(std::size_t i) { return std::sin(0.001 * static_cast<double>(i)); }

int without_a_device(const char* why) {
  try {
    qccl::CudaVector refused(nullptr, 0, nullptr);
    std::printf("WRONG: a CudaVector was made without a usable CUDA device (%s)\n", why);
    return 1;
  } catch (const qccl::Error& e) {
    const bool named = std::strncmp(e.what(), "CUDA: ", 6) == 0;
    std::printf("no usable CUDA device here (%s): CudaVector refused with qccl::Error: %s%s\n", why,
                e.what(), named ? "" : " -- WRONG: the message does not name the CUDA call");
    return named ? 0 : 1;
  }
}

// One rank: its values to the device, the allreduce on the device, the
// mean back to `result`.
void run_rank(qccl::Transport& transport, std::vector<float>& result) {
  qccl::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  qccl::Communicator comm(transport);
  std::vector<float> host(kCount);
  for (std::size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>((comm.rank() + 1) * base_value(i));

  qccl::CudaStream stream;
  qccl::DeviceBuffer<float> values(host, stream.get());
  auto codec = qccl::make_codec("global-qsgd:bits=8", {.seed = 1, .bucket = 0});
  qccl::CudaVector on_device(values.data(), values.size(), stream.get());
  codec->allreduce_mean(comm, on_device);
  result = values.to_host(stream.get());
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess) return without_a_device(cudaGetErrorName(found));
  if (devices == 0) return without_a_device("no devices");

  std::vector<std::vector<float>> results(kRanks);
  qccl::run_in_process(kRanks, [&](qccl::Transport& transport) {
    run_rank(transport, results[static_cast<std::size_t>(transport.rank())]);
  });

  double worst = 0, inf_norm = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    const double exact = (kRanks + 1) / 2.0 * base_value(i);
    worst = std::max(worst, std::abs(results[0][i] - exact));
    inf_norm = std::max(inf_norm, std::abs(kRanks * base_value(i)));
  }
  const auto codec = qccl::make_codec("global-qsgd:bits=8", {.seed = 1, .bucket = 0});
  const double bound = codec->error_bound(inf_norm, kRanks, qccl::Algorithm::ring,
                                          qccl::CodecOperation::allreduce_mean);
  const bool identical = std::equal(results[0].begin(), results[0].end(), results[1].begin());
  const bool within = std::isfinite(bound) && bound > 0 && worst <= bound + 1e-6 * inf_norm;
  std::printf("global-qsgd:bits=8 allreduce (mean) of %zu floats on the GPU, %d in-process ranks: "
              "largest error %.3g, bound %.3g: %s, %s\n",
              kCount, kRanks, worst, bound, within ? "within the bound" : "WRONG: beyond the bound",
              identical ? "bitwise identical on every rank" : "WRONG: ranks differ");
  return within && identical ? 0 : 1;
}
