#include "device_bucket.h"

#include "compressor.h"
#include "qccl/codecs/host_memory_vector.h"
#include "qccl/common/errors.h"

#ifdef QCCL_PYTHON_CUDA
#include <cuda_runtime_api.h>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/cuda_vector.h"
#endif

namespace qccl::python {

BucketMemory parse_bucket_memory(const std::string& text) {
  if (text == "host") return BucketMemory::host;
  if (text == "cuda") return BucketMemory::cuda;
  if (text == "host-reference") return BucketMemory::host_reference;
  throw InvalidArgument("bucket memory '" + text + "': expected host, cuda or host-reference");
}

std::string cuda_missing(const std::string& what) {
  return "this qccl was built without CUDA, so it cannot " + what + ": build it where nvcc is "
         "found (QCCL_CUDA=ON, docs/gpu.md), or keep the tensors on the CPU";
}

bool cuda_buckets_supported() {
#ifdef QCCL_PYTHON_CUDA
  return true;
#else
  return false;
#endif
}

DeviceVectorCache::~DeviceVectorCache() {
#ifdef QCCL_PYTHON_CUDA
  if (cuda_.empty()) return;  // never used: the CUDA runtime is not touched
  int previous = 0;
  const bool known = cudaGetDevice(&previous) == cudaSuccess;
  for (auto& [device, vector] : cuda_) {
    cudaSetDevice(device);
    vector.reset();
  }
  if (known) cudaSetDevice(previous);
#endif
}

DeviceStepVector::DeviceStepVector(const DeviceBucket& bucket, std::chrono::milliseconds timeout,
                                   DeviceVectorCache& cache) {
  if (bucket.memory == BucketMemory::host_reference) {
    host_reference_ = std::make_unique<HostMemoryVector>(floats_at(bucket.values, bucket.count));
    vector_ = host_reference_.get();
    return;
  }
  if (bucket.memory != BucketMemory::cuda) {
    throw InvalidArgument("a host bucket has no device vector (a bug in the hook: report it)");
  }
#ifdef QCCL_PYTHON_CUDA
  int previous = 0;
  check_cuda(cudaGetDevice(&previous), "reading the thread's current device");
  check_cuda(cudaSetDevice(bucket.device), "making the bucket's device current");
  previous_device_ = previous;
  try {
    auto* values = reinterpret_cast<float*>(bucket.values);
    auto* stream = reinterpret_cast<cudaStream_t>(bucket.stream);
    auto& cached = cache.cuda_[bucket.device];
    if (cached == nullptr) {
      cached = std::make_unique<CudaVector>(values, bucket.count, stream, timeout);
    } else {
      static_cast<CudaVector&>(*cached).bind(values, bucket.count, stream);
    }
    vector_ = cached.get();
  } catch (...) {
    cudaSetDevice(previous_device_);
    throw;
  }
#else
  (void)timeout;
  (void)cache;
  throw InvalidArgument(cuda_missing("average CUDA tensors"));
#endif
}

DeviceStepVector::~DeviceStepVector() {
#ifdef QCCL_PYTHON_CUDA
  if (previous_device_ >= 0) cudaSetDevice(previous_device_);
#endif
}

}  // namespace qccl::python
