// CUDA runtime errors as qccl exceptions whose message names the call that
// failed, CUDA's own words for the cause and what to check; and waits for a
// stream with a deadline.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <thread>

#include "qccl/common/errors.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) +
              "); check that a CUDA device is present, that its driver is at least as new as "
              "the CUDA runtime qccl was built with, and that the build's architectures "
              "(QCCL_CUDA_ARCHITECTURES) include the device's");
}

// Polls `query` (cudaStreamQuery or cudaEventQuery of one handle) until
// the work it asks about is done; throws TimeoutError naming `what` if it
// is not done within `timeout`, or the CUDA error it reports.
template <class Query>
void wait_until_done(Query query, std::chrono::milliseconds timeout, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t state = query();
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

// Blocks until the work queued on `stream` is done (wait_until_done).
inline void wait_for_stream(cudaStream_t stream, std::chrono::milliseconds timeout, const char* what) {
  wait_until_done([stream] { return cudaStreamQuery(stream); }, timeout, what);
}

// Blocks until the work recorded by `event` is done (wait_until_done).
inline void wait_for_event(cudaEvent_t event, std::chrono::milliseconds timeout, const char* what) {
  wait_until_done([event] { return cudaEventQuery(event); }, timeout, what);
}

// How long qccl waits for device work it queued unless told otherwise.
inline constexpr std::chrono::milliseconds kDeviceTimeout = std::chrono::minutes(5);

}  // namespace qccl
QCCL_API_END
