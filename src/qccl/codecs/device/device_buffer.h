// RAII ownership of device memory: a typed array on the current CUDA
// device, freed when the buffer goes, copied to and from host vectors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ == 0) return;
    void* memory = nullptr;
    check_cuda(cudaMalloc(&memory, count_ * sizeof(T)), "cudaMalloc");
    data_ = static_cast<T*>(memory);
  }
  // A device copy of `host`, made on `stream` (which it synchronises).
  DeviceBuffer(const std::vector<T>& host, cudaStream_t stream) : DeviceBuffer(host.size()) {
    if (count_ == 0) return;
    check_cuda(cudaMemcpyAsync(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync to the device");
    wait_for_stream(stream, kDeviceTimeout, "copying to the device");
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }

  // The contents, copied back once the work queued on `stream` is done.
  std::vector<T> to_host(cudaStream_t stream) const {
    std::vector<T> host(count_);
    if (count_ == 0) return host;
    check_cuda(cudaMemcpyAsync(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync to the host");
    wait_for_stream(stream, kDeviceTimeout, "copying to the host");
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace qccl

namespace qccl {

// Page-locked host memory (cudaMallocHost), which copies to and from the
// device run from asynchronously at full speed.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) check_cuda(cudaMallocHost(&data_, bytes_), "cudaMallocHost");
  }
  ~PinnedHostBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  std::byte* data() { return static_cast<std::byte*>(data_); }
  std::size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace qccl
QCCL_API_END
