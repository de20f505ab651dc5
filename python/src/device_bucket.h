// A DDP gradient bucket that lives in a device's memory, as the DeviceVector
// a codec's device step runs on (codecs/device_vector.h): CUDA memory with
// the stream the bucket's producer ran on, or — where no GPU is — the host
// reference of the device's work on host memory (HostMemoryVector), which
// runs the hook's device path with the same bytes so that it is tested
// without a GPU.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "qccl/codecs/device_vector.h"

namespace qccl::python {

enum class BucketMemory {
  host,            // fp32 or half values on the host: the host step
  cuda,            // fp32 values in a CUDA device's memory
  host_reference,  // fp32 values on the host, through the device step's host reference
};

// "host", "cuda" or "host-reference"; anything else is refused.
BucketMemory parse_bucket_memory(const std::string& text);

// Whether this build can run CUDA buckets (the device code was compiled).
bool cuda_buckets_supported();
// The refusal of a build without CUDA asked to `what` (e.g. "average CUDA
// gradients"), with how to build one that can.
std::string cuda_missing(const std::string& what);

struct DeviceBucket {
  BucketMemory memory = BucketMemory::cuda;
  std::uintptr_t values = 0;  // `count` fp32 values
  std::size_t count = 0;
  std::uintptr_t stream = 0;  // cudaStream_t of the producer (0: the legacy default stream)
  int device = 0;             // the CUDA device that holds the values
};

// The CUDA vectors of one user's device steps (a hook, a Compressor), one
// per device, kept from step to step and rebound to each bucket, so that a
// step creates no streams and allocates no device or pinned memory once
// the largest bucket has been seen. Used by one thread at a time (the
// hook's stream thread or caller, a Compressor holding its codec).
class DeviceVectorCache {
 public:
  DeviceVectorCache() = default;
  ~DeviceVectorCache();  // each vector freed with its device current
  DeviceVectorCache(const DeviceVectorCache&) = delete;
  DeviceVectorCache& operator=(const DeviceVectorCache&) = delete;

 private:
  friend class DeviceStepVector;
  std::map<int, std::unique_ptr<DeviceVector>> cuda_;  // CudaVectors, by device
};

// The vector one device step runs on, for as long as it lives. For CUDA it
// makes the bucket's device current on the calling thread (the hook's
// stream thread is not the one that made the bucket), binds the cache's
// vector of that device to the bucket, and makes the thread's previous
// device current again at its end, so a call from Python leaves the
// caller's current device as it was. Throws InvalidArgument where this
// build has no CUDA.
class DeviceStepVector {
 public:
  DeviceStepVector(const DeviceBucket& bucket, std::chrono::milliseconds timeout,
                   DeviceVectorCache& cache);
  ~DeviceStepVector();
  DeviceStepVector(const DeviceStepVector&) = delete;
  DeviceStepVector& operator=(const DeviceStepVector&) = delete;

  DeviceVector& get() { return *vector_; }

 private:
  int previous_device_ = -1;  // CUDA: the thread's device before; -1 for none to restore
  std::unique_ptr<DeviceVector> host_reference_;  // owned; a CUDA vector is the cache's
  DeviceVector* vector_ = nullptr;
};

}  // namespace qccl::python
