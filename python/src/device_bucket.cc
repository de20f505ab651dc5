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

bool cuda_buckets_supported() {
#ifdef QCCL_PYTHON_CUDA
  return true;
#else
  return false;
#endif
}

DeviceStepVector::DeviceStepVector(const DeviceBucket& bucket, std::chrono::milliseconds timeout) {
  if (bucket.memory == BucketMemory::host_reference) {
    vector_ = std::make_unique<HostMemoryVector>(floats_at(bucket.values, bucket.count));
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
    vector_ = std::make_unique<CudaVector>(reinterpret_cast<float*>(bucket.values), bucket.count,
                                           reinterpret_cast<cudaStream_t>(bucket.stream), timeout);
  } catch (...) {
    cudaSetDevice(previous_device_);
    throw;
  }
#else
  (void)timeout;
  throw InvalidArgument("this qccl was built without CUDA, so it cannot average CUDA tensors: "
                        "build it where nvcc is found (QCCL_CUDA=ON, docs/gpu.md), or keep the "
                        "model on the CPU");
#endif
}

// The vector goes first (its end waits for its streams on its device).
DeviceStepVector::~DeviceStepVector() {
  vector_.reset();
#ifdef QCCL_PYTHON_CUDA
  if (previous_device_ >= 0) cudaSetDevice(previous_device_);
#endif
}

}  // namespace qccl::python
