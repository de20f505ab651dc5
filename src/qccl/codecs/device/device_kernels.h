// The codecs' kernels on CUDA device memory: the same operations as
// kernels.h, with the same arguments and, for the same inputs, the same
// output bytes — each element is computed by the body in element_ops.h that
// the host tests check against the CPU kernels. Pointers are device memory;
// every call is enqueued on `stream` and returns at once. Results that the
// CPU kernels return (a sum out of range, IntSGD's clipped count and largest
// level) accumulate into a DeviceStatus in device memory, read after the
// stream is synchronised (DeviceStatus::read), so no call blocks.
//
// Only the CUDA build has this header's definitions (QCCL_CUDA; see
// docs/gpu.md). Inputs must be finite, as the codecs check before encoding:
// on NaN the device and the CPU may return different NaN bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "qccl/codecs/device/device_status.h"

namespace qccl::device_kernels {

// Linear dithering (Global-QSGD L_s), kernels.h's linear_encode_i8 and friends.
void linear_encode_i8(const float* x, std::int8_t* q, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream);
void linear_encode_i4(const float* x, std::uint8_t* packed, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream);
void linear_decode_i8(const std::int8_t* q, float* out, std::size_t n, float step,
                      cudaStream_t stream);
void linear_decode_i4(const std::uint8_t* packed, float* out, std::size_t n, float step,
                      cudaStream_t stream);
// acc[i] += in[i]; status->out_of_range set if a sum leaves [-limit, limit].
void add_i8_checked(std::int8_t* acc, const std::int8_t* in, std::size_t n, std::int32_t limit,
                    DeviceStatus* status, cudaStream_t stream);
void add_i32_checked(std::int32_t* acc, const std::int32_t* in, std::size_t n,
                     std::int32_t limit, DeviceStatus* status, cudaStream_t stream);
// Global-QSGD §8's averaging step on 8-bit and packed 4-bit levels.
void average_i8(const std::int8_t* a, const std::int8_t* b, std::int8_t* out, std::size_t n,
                std::int32_t ka, std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high,
                std::uint64_t first, cudaStream_t stream);
void average_i4(std::uint8_t* a, const std::uint8_t* b, std::size_t n, std::int32_t ka,
                std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                cudaStream_t stream);

// IntSGD's integer rounding; clipped count and largest |level| into status.
void int_round_i8(const float* x, std::int8_t* q, std::size_t n, float alpha, std::int32_t limit,
                  bool random, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                  DeviceStatus* status, cudaStream_t stream);
void int_round_i32(const float* x, std::int32_t* q, std::size_t n, float alpha,
                   std::int32_t limit, bool random, std::uint32_t k_low, std::uint32_t k_high,
                   std::uint64_t first, DeviceStatus* status, cudaStream_t stream);
// The int64 wire: IntSGD's rounding in fp64 (element_ops.h's
// wide_rounded_integer, 64 random bits per element); clipped count into
// status.
void int_round_i64(const float* x, std::int64_t* q, std::size_t n, double alpha, std::int64_t limit,
                   bool random, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                   DeviceStatus* status, cudaStream_t stream);
// out[i] = s[i]·factor saturated; largest |s[i]| into status.
void int_decode_i8(const std::int8_t* s, float* out, std::size_t n, float factor,
                   DeviceStatus* status, cudaStream_t stream);
void int_decode_i32(const std::int32_t* s, float* out, std::size_t n, float factor,
                    DeviceStatus* status, cudaStream_t stream);
// out[i] = s[i]·factor in fp64, saturated to fp32 (the host's refusal of
// sums beyond n·c happens before the codes come to the device).
void int_decode_i64(const std::int64_t* s, float* out, std::size_t n, double factor,
                    cudaStream_t stream);

// Exponential dithering (Global-QSGD E_s) and its C_nat reduce (Algorithm 2).
void exp_encode(const float* x, std::uint8_t* code, std::size_t n, float norm, std::int32_t c,
                std::int32_t s, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                cudaStream_t stream);
void exp_decode(const std::uint8_t* code, float* out, std::size_t n, std::int32_t c, float scale,
                cudaStream_t stream);
void exp_reduce(std::uint8_t* acc, const std::uint8_t* in, std::size_t n, std::uint32_t k_low,
                std::uint32_t k_high, std::uint64_t first, DeviceStatus* status,
                cudaStream_t stream);

// Min-max quantization (QSDP's gradients and weights).
void minmax_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double scale,
                      std::int32_t top, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream);
void lattice_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo,
                       double inv_step, double offset, std::int32_t top, cudaStream_t stream);
void affine_decode_u8(const std::uint8_t* q, float* out, std::size_t n, double base, double step,
                      cudaStream_t stream);
void affine_decode_add_u8(const std::uint8_t* q, float* out, std::size_t n, double base,
                          double step, cudaStream_t stream);

// Min-max bucket records (element_ops.h: record_bytes), QSDP's buckets on
// device data: the range of each bucket of `per_range` elements from x[0]
// (exact: the min and max of order keys), then each element's level index
// (element_ops.h: minmax_bucket_level, drawing with counter first + i).
void minmax_records_encode(const float* x, std::uint8_t* records, std::size_t n,
                           std::size_t per_range, std::int32_t top, bool lattice, double offset,
                           std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                           cudaStream_t stream);
// out[i] = the decoded values of element i in `ranks` ranks' records (one
// rank's after another, record_bytes(n, per_range) apart) summed in rank
// order and divided by divide_by (element_ops.h: mean_in_rank_order).
void minmax_records_mean(const std::uint8_t* records, float* out, std::size_t n,
                         std::size_t per_range, std::int32_t top, double shift, std::int32_t ranks,
                         std::int32_t divide_by, cudaStream_t stream);

// fp16 (IEEE bits in 16-bit words), round to nearest even.
void fp16_encode(const float* x, std::uint16_t* h, std::size_t n, float factor,
                 cudaStream_t stream);
void fp16_decode(const std::uint16_t* h, float* out, std::size_t n, cudaStream_t stream);
void fp16_add(std::uint16_t* acc, const std::uint16_t* in, std::size_t n, cudaStream_t stream);

// fp32 (the codec of no compression): acc[i] += in[i]; out[i] = x[i]·factor
// (fp32_mean.h's scaling by 2^-k, or 1); out[i] = the mean of the sums
// (element_ops.h: fp32_mean_value).
void fp32_add(float* acc, const float* in, std::size_t n, cudaStream_t stream);
void fp32_scale(const float* x, float* out, std::size_t n, float factor, cudaStream_t stream);
void fp32_mean(const float* sum, float* out, std::size_t n, float ranks, double wide_step,
               cudaStream_t stream);

// The statistics every codec exchanges before its data moves (the global
// norm's local part): max over i of the bits of |x[i]| into
// status->largest, as kernels::max_abs_bits.
void max_abs_bits(const float* x, std::size_t n, DeviceStatus* status, cudaStream_t stream);
// kernels::sum_of_squares, the same double: the device sums each block of
// 1024 in kernels.h's 16 fixed fp32 lanes; the host adds the lanes (n/64
// floats, copied back) and the tail in the CPU kernel's order. Blocking:
// synchronises `stream`.
double sum_of_squares(const float* x, std::size_t n, cudaStream_t stream);

}  // namespace qccl::device_kernels
