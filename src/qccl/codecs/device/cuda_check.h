// CUDA runtime errors as qccl exceptions whose message names the call that
// failed, CUDA's own words for the cause and what to check.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "qccl/common/errors.h"

namespace qccl {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) +
              "); check that a CUDA device is present, that its driver is at least as new as "
              "the CUDA runtime qccl was built with, and that the build's architectures "
              "(QCCL_CUDA_ARCHITECTURES) include the device's");
}

}  // namespace qccl
