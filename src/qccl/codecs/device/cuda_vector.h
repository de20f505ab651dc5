// A DeviceVector (codecs/device_vector.h) on a CUDA device: the caller's
// fp32 values in device memory and the stream their producer ran on, so
// that the codec's kernels run after it. Codes go to and come from pinned
// host buffers the vector keeps between steps (grown when a step needs
// more). Every wait for the stream has a deadline.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/device_buffer.h"
#include "qccl/codecs/device/device_kernels.h"
#include "qccl/codecs/device_vector.h"

namespace qccl {

class CudaVector final : public DeviceVector {
 public:
  // `values`: `count` floats in device memory of the current device.
  CudaVector(float* values, std::size_t count, cudaStream_t stream,
             std::chrono::milliseconds timeout = kDeviceTimeout);

  std::size_t size() const override { return count_; }
  double norm_statistic(NormKind kind) override;
  std::span<const std::byte> encode(const ElementForm& form) override;
  std::span<std::byte> result_codes(std::size_t bytes) override;
  void decode_result(const ElementForm& form) override;
  void fill_zero() override;

 private:
  // Blocks until the stream's work is done, or throws TimeoutError.
  void wait(const char* what) const;
  std::byte* device_codes(std::size_t bytes);
  device_kernels::DeviceStatus read_status(const char* what);

  float* values_;
  std::size_t count_;
  cudaStream_t stream_;
  std::chrono::milliseconds timeout_;
  DeviceBuffer<std::byte> codes_{0};
  DeviceBuffer<device_kernels::DeviceStatus> status_{1};
  PinnedHostBuffer codes_host_, result_host_;
  std::size_t result_bytes_ = 0;
};

}  // namespace qccl
