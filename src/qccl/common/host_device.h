// What lets one function body compile for the CPU and, under nvcc, for a
// CUDA device too: QCCL_HOST_DEVICE marks it for both (nothing in a host
// build), and the bit casts below use the device's own intrinsics there,
// memcpy on the host. Code written with these (codecs/kernels/element_ops.h)
// is the per-element arithmetic of the codecs, shared by the CPU reference
// and the device kernels so that both give the same bytes.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define QCCL_HOST_DEVICE __host__ __device__
#else
#define QCCL_HOST_DEVICE
#endif

namespace qccl {

QCCL_HOST_DEVICE inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
#endif
}

QCCL_HOST_DEVICE inline float float_from_bits(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  std::memcpy(&f, &b, 4);
  return f;
#endif
}

}  // namespace qccl
