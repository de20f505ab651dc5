// RAII ownership of a CUDA stream and of CUDA events (waits with a
// deadline: wait_for_stream and wait_for_event, cuda_check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <type_traits>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// A CUDA handle (a pointer to an opaque runtime object) that `Destroy`
// releases when its owner goes; movable, not copyable.
template <class Handle, cudaError_t (*Destroy)(Handle)>
class CudaHandle {
 public:
  Handle get() const { return owned_.get(); }

 protected:
  explicit CudaHandle(Handle handle) : owned_(handle) {}

 private:
  struct Release {
    void operator()(Handle handle) const { Destroy(handle); }
  };
  std::unique_ptr<std::remove_pointer_t<Handle>, Release> owned_;
};

// A stream of the current device that does not synchronise with the legacy
// default stream; work on it is ordered against other streams by events.
class CudaStream : public CudaHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  CudaStream() : CudaHandle(create()) {}

 private:
  static cudaStream_t create() {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return stream;
  }
};

// An event without timing (the cheapest kind), for ordering and waiting.
class CudaEvent : public CudaHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  CudaEvent() : CudaHandle(create()) {}

 private:
  static cudaEvent_t create() {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    return event;
  }
};

}  // namespace qccl
QCCL_API_END
