// RAII ownership of a CUDA stream and of CUDA events, and a wait for an
// event with a deadline (as wait_for_stream, cuda_check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "qccl/codecs/device/cuda_check.h"

namespace qccl {

// A stream of the current device that does not synchronise with the legacy
// default stream; work on it is ordered against other streams by events.
class CudaStream {
 public:
  CudaStream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing (the cheapest kind), for ordering and waiting.
class CudaEvent {
 public:
  CudaEvent() { check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate"); }
  ~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Blocks until the work recorded by `event` is done; throws TimeoutError
// naming `what` if it is not done within `timeout`.
inline void wait_for_event(cudaEvent_t event, std::chrono::milliseconds timeout, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t state = cudaEventQuery(event);
    if (state != cudaErrorNotReady) {
      check_cuda(state, what);
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw TimeoutError(std::string("CUDA: ") + what + " did not finish within " +
                         std::to_string(timeout.count()) + " ms; the device may be hung or busy "
                         "with long-running work");
    }
    std::this_thread::yield();
  }
}

}  // namespace qccl
