// The device kernels of device_kernels.h. Each element-wise kernel is a
// grid-stride loop over the body in element_ops.h that the CPU codecs are
// tested against, with the generator's counter the element's index, so the
// bytes do not depend on how the work is split over threads. The 4-bit
// kernels give each thread a byte (two elements). Status results (sums out
// of range, IntSGD's counts) are combined per warp and then with one atomic
// per warp. Compiled with --fmad=false (see element_ops.h).
#include "qccl/codecs/device/device_kernels.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/kernels/element_ops.h"

namespace qccl::device_kernels {
namespace {

namespace ops = element_ops;

constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;  // grid-stride beyond 2^20 threads

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min(kMaxBlocks, (n + kThreads - 1) / kThreads));
}

template <class Body>
__global__ void for_each_element(std::size_t n, Body body) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    body(i);
  }
}

// Runs body(i) for i in [0, n) on `stream`.
template <class Body>
void launch(std::size_t n, cudaStream_t stream, const char* what, Body body) {
  if (n == 0) return;
  for_each_element<<<blocks_for(n), kThreads, 0, stream>>>(n, body);
  check_cuda(cudaGetLastError(), what);
}

// One thread's share of a status, combined over its warp, then into
// `status` with one atomic each (only where there is something to add).
struct StatusShare {
  std::uint32_t out_of_range = 0;
  std::uint32_t largest = 0;
  std::uint32_t clipped = 0;

  // Every thread of the block calls it (blocks are whole warps).
  __device__ void publish(DeviceStatus* status) const {
    constexpr unsigned kWarp = 0xFFFFFFFFU;
    const std::uint32_t any = __reduce_or_sync(kWarp, out_of_range);
    const std::uint32_t top = __reduce_max_sync(kWarp, largest);
    const std::uint32_t count = __reduce_add_sync(kWarp, clipped);
    if (threadIdx.x % 32 != 0) return;
    if (any != 0) atomicOr(&status->out_of_range, any);
    if (top != 0) atomicMax(&status->largest, top);
    if (count != 0) atomicAdd(&status->clipped, static_cast<unsigned long long>(count));
  }
};

// body(i, share) for i in [0, n), then each thread's share into `status`.
template <class Body>
__global__ void for_each_element_with_status(std::size_t n, DeviceStatus* status, Body body) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  StatusShare share;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    body(i, share);
  }
  share.publish(status);
}

template <class Body>
void launch_with_status(std::size_t n, DeviceStatus* status, cudaStream_t stream,
                        const char* what, Body body) {
  if (n == 0) return;
  for_each_element_with_status<<<blocks_for(n), kThreads, 0, stream>>>(n, status, body);
  check_cuda(cudaGetLastError(), what);
}

}  // namespace

void linear_encode_i8(const float* x, std::int8_t* q, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream) {
  launch(n, stream, "linear_encode_i8", [=] __device__(std::size_t i) {
    q[i] = ops::linear_level(x[i], scale, levels, ops::random_bits(k_low, k_high, first + i));
  });
}

void linear_encode_i4(const float* x, std::uint8_t* packed, std::size_t n, float scale,
                      std::int32_t levels, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream) {
  launch((n + 1) / 2, stream, "linear_encode_i4", [=] __device__(std::size_t j) {
    const std::size_t i = 2 * j;
    const std::int8_t low = ops::linear_level(x[i], scale, levels, ops::random_bits(k_low, k_high, first + i));
    const std::int8_t high = i + 1 < n ? ops::linear_level(x[i + 1], scale, levels,
                                                           ops::random_bits(k_low, k_high, first + i + 1))
                                       : std::int8_t{0};
    packed[j] = ops::nibble_pair(low, high);
  });
}

void linear_decode_i8(const std::int8_t* q, float* out, std::size_t n, float step,
                      cudaStream_t stream) {
  launch(n, stream, "linear_decode_i8",
         [=] __device__(std::size_t i) { out[i] = ops::level_value(q[i], step); });
}

void linear_decode_i4(const std::uint8_t* packed, float* out, std::size_t n, float step,
                      cudaStream_t stream) {
  launch(n, stream, "linear_decode_i4", [=] __device__(std::size_t i) {
    const std::uint8_t byte = packed[i / 2];
    out[i] = ops::level_value(i % 2 ? ops::high_nibble(byte) : ops::low_nibble(byte), step);
  });
}

void add_i8_checked(std::int8_t* acc, const std::int8_t* in, std::size_t n, std::int32_t limit,
                    DeviceStatus* status, cudaStream_t stream) {
  launch_with_status(n, status, stream, "add_i8_checked",
                     [=] __device__(std::size_t i, StatusShare& share) {
                       const std::int64_t sum = std::int64_t{acc[i]} + in[i];
                       share.out_of_range |= !ops::sum_within(sum, limit);
                       acc[i] = static_cast<std::int8_t>(sum);
                     });
}

void add_i32_checked(std::int32_t* acc, const std::int32_t* in, std::size_t n,
                     std::int32_t limit, DeviceStatus* status, cudaStream_t stream) {
  launch_with_status(n, status, stream, "add_i32_checked",
                     [=] __device__(std::size_t i, StatusShare& share) {
                       const std::int64_t sum = std::int64_t{acc[i]} + in[i];
                       share.out_of_range |= !ops::sum_within(sum, limit);
                       acc[i] = static_cast<std::int32_t>(sum);
                     });
}

void average_i8(const std::int8_t* a, const std::int8_t* b, std::int8_t* out, std::size_t n,
                std::int32_t ka, std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high,
                std::uint64_t first, cudaStream_t stream) {
  const float inverse_k = 1.0f / static_cast<float>(ka + kb);
  launch(n, stream, "average_i8", [=] __device__(std::size_t i) {
    out[i] = ops::averaged_level(a[i], b[i], ka, kb, inverse_k, ops::random_bits(k_low, k_high, first + i));
  });
}

void average_i4(std::uint8_t* a, const std::uint8_t* b, std::size_t n, std::int32_t ka,
                std::int32_t kb, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                cudaStream_t stream) {
  const float inverse_k = 1.0f / static_cast<float>(ka + kb);
  launch((n + 1) / 2, stream, "average_i4", [=] __device__(std::size_t j) {
    const std::size_t i = 2 * j;
    const std::int8_t low = ops::averaged_level(ops::low_nibble(a[j]), ops::low_nibble(b[j]), ka, kb,
                                                inverse_k, ops::random_bits(k_low, k_high, first + i));
    const std::int8_t high = i + 1 < n ? ops::averaged_level(ops::high_nibble(a[j]), ops::high_nibble(b[j]),
                                                             ka, kb, inverse_k,
                                                             ops::random_bits(k_low, k_high, first + i + 1))
                                       : std::int8_t{0};
    a[j] = ops::nibble_pair(low, high);
  });
}

namespace {

template <class Int>
void int_round(const float* x, Int* q, std::size_t n, float alpha, std::int32_t limit, bool random,
               std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
               DeviceStatus* status, cudaStream_t stream, const char* what) {
  launch_with_status(n, status, stream, what, [=] __device__(std::size_t i, StatusShare& share) {
    const auto r = ops::rounded_integer(x[i], alpha, limit, random, ops::random_bits(k_low, k_high, first + i));
    q[i] = static_cast<Int>(r.level);
    share.clipped += r.clipped;
    share.largest = max(share.largest, ops::integer_magnitude(r.level));
  });
}

template <class Int>
void int_decode(const Int* s, float* out, std::size_t n, float factor, DeviceStatus* status,
                cudaStream_t stream, const char* what) {
  launch_with_status(n, status, stream, what, [=] __device__(std::size_t i, StatusShare& share) {
    const std::int32_t v = s[i];
    share.largest = max(share.largest, ops::integer_magnitude(v));
    out[i] = ops::level_value(v, factor);
  });
}

}  // namespace

void int_round_i8(const float* x, std::int8_t* q, std::size_t n, float alpha, std::int32_t limit,
                  bool random, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                  DeviceStatus* status, cudaStream_t stream) {
  int_round(x, q, n, alpha, limit, random, k_low, k_high, first, status, stream, "int_round_i8");
}

void int_round_i32(const float* x, std::int32_t* q, std::size_t n, float alpha,
                   std::int32_t limit, bool random, std::uint32_t k_low, std::uint32_t k_high,
                   std::uint64_t first, DeviceStatus* status, cudaStream_t stream) {
  int_round(x, q, n, alpha, limit, random, k_low, k_high, first, status, stream, "int_round_i32");
}

void int_decode_i8(const std::int8_t* s, float* out, std::size_t n, float factor,
                   DeviceStatus* status, cudaStream_t stream) {
  int_decode(s, out, n, factor, status, stream, "int_decode_i8");
}

void int_decode_i32(const std::int32_t* s, float* out, std::size_t n, float factor,
                    DeviceStatus* status, cudaStream_t stream) {
  int_decode(s, out, n, factor, status, stream, "int_decode_i32");
}

void int_round_i64(const float* x, std::int64_t* q, std::size_t n, double alpha, std::int64_t limit,
                   bool random, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                   DeviceStatus* status, cudaStream_t stream) {
  const auto bound = static_cast<double>(limit);
  launch_with_status(n, status, stream, "int_round_i64", [=] __device__(std::size_t i, StatusShare& share) {
    const std::uint64_t bits = random ? ops::random_bits64(k_low, k_high, first + i) : 0;
    const auto r = ops::wide_rounded_integer(x[i], alpha, bound, random, bits);
    q[i] = r.level;
    share.clipped += r.clipped;
  });
}

void int_decode_i64(const std::int64_t* s, float* out, std::size_t n, double factor,
                    cudaStream_t stream) {
  launch(n, stream, "int_decode_i64",
         [=] __device__(std::size_t i) { out[i] = ops::wide_level_value(s[i], factor); });
}

void exp_encode(const float* x, std::uint8_t* code, std::size_t n, float norm, std::int32_t c,
                std::int32_t s, std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                cudaStream_t stream) {
  const float below_scale = float_from_bits(static_cast<std::uint32_t>(127 + s - 1) << 23);
  launch(n, stream, "exp_encode", [=] __device__(std::size_t i) {
    code[i] = ops::exp_code(x[i], norm, c, s, below_scale, ops::random_bits(k_low, k_high, first + i));
  });
}

void exp_decode(const std::uint8_t* code, float* out, std::size_t n, std::int32_t c, float scale,
                cudaStream_t stream) {
  launch(n, stream, "exp_decode",
         [=] __device__(std::size_t i) { out[i] = ops::exp_value(code[i], c, scale); });
}

void exp_reduce(std::uint8_t* acc, const std::uint8_t* in, std::size_t n, std::uint32_t k_low,
                std::uint32_t k_high, std::uint64_t first, DeviceStatus* status,
                cudaStream_t stream) {
  launch_with_status(n, status, stream, "exp_reduce",
                     [=] __device__(std::size_t i, StatusShare& share) {
                       const auto sum = ops::exp_sum(acc[i], in[i], ops::random_bits(k_low, k_high, first + i));
                       share.out_of_range |= !sum.valid;
                       acc[i] = sum.code;
                     });
}

void minmax_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo, double scale,
                      std::int32_t top, std::uint32_t k_low, std::uint32_t k_high,
                      std::uint64_t first, cudaStream_t stream) {
  launch(n, stream, "minmax_encode_u8", [=] __device__(std::size_t i) {
    q[i] = ops::minmax_level(x[i], lo, scale, top, ops::random_bits(k_low, k_high, first + i));
  });
}

void lattice_encode_u8(const float* x, std::uint8_t* q, std::size_t n, double lo,
                       double inv_step, double offset, std::int32_t top, cudaStream_t stream) {
  launch(n, stream, "lattice_encode_u8", [=] __device__(std::size_t i) {
    q[i] = ops::lattice_level(x[i], lo, inv_step, offset, top);
  });
}

void affine_decode_u8(const std::uint8_t* q, float* out, std::size_t n, double base, double step,
                      cudaStream_t stream) {
  launch(n, stream, "affine_decode_u8",
         [=] __device__(std::size_t i) { out[i] = ops::affine_value(q[i], base, step); });
}

void affine_decode_add_u8(const std::uint8_t* q, float* out, std::size_t n, double base,
                          double step, cudaStream_t stream) {
  launch(n, stream, "affine_decode_add_u8",
         [=] __device__(std::size_t i) { out[i] += ops::affine_value(q[i], base, step); });
}

namespace {

// One thread block per bucket: the block's threads take the min and max of
// their elements' order keys, combine them with shared-memory atomics (exact
// in any order), then encode the bucket's elements against that range.
__global__ void bucket_records(const float* x, std::uint8_t* records, std::size_t n,
                               std::size_t per_range, std::int32_t top, bool lattice, double offset,
                               std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first) {
  __shared__ std::int32_t lo, hi;
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * per_range;
  const std::size_t end = start + per_range < n ? start + per_range : n;
  if (threadIdx.x == 0) {
    lo = ops::order_key(x[start]);
    hi = lo;
  }
  __syncthreads();
  std::int32_t low = lo, high = lo;
  for (std::size_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    low = ops::smaller(low, ops::order_key(x[i]));
    high = ops::larger(high, ops::order_key(x[i]));
  }
  atomicMin(&lo, low);
  atomicMax(&hi, high);
  __syncthreads();
  const float range_lo = ops::from_order_key(lo), range_hi = ops::from_order_key(hi);
  if (threadIdx.x == 0) {
    ops::store_float(records + ops::record_range_at(start, per_range), range_lo);
    ops::store_float(records + ops::record_range_at(start, per_range) + 4, range_hi);
  }
  for (std::size_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    records[ops::record_index_at(i, per_range)] = ops::minmax_bucket_level(
        x[i], range_lo, range_hi, top, lattice, offset, ops::random_bits(k_low, k_high, first + i));
  }
}

// Wide buckets (one range per vector, min-max's bucket=0): one thread
// block per bucket would leave the device idle, so the range is taken by
// every block over its own segment of `segment` elements, each thread's
// min and max of order keys combined into keys[2b], keys[2b + 1] by global
// atomics (exact in any order, as in bucket_records), then the elements
// are encoded against it by a second kernel.
constexpr std::size_t kWideBucket = std::size_t{1} << 16;  // elements
constexpr std::size_t kWideSegment = std::size_t{kThreads} * 16;

__global__ void wide_range_start(std::int32_t* keys, std::size_t buckets) {
  for (std::size_t b = threadIdx.x; b < buckets; b += blockDim.x) {
    keys[2 * b] = INT32_MAX;
    keys[2 * b + 1] = INT32_MIN;
  }
}

__global__ void wide_ranges(const float* x, std::int32_t* keys, std::size_t n, std::size_t per_range) {
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * kWideSegment;
  const std::size_t end = start + kWideSegment < n ? start + kWideSegment : n;
  std::size_t bucket = SIZE_MAX;
  std::int32_t low = INT32_MAX, high = INT32_MIN;
  for (std::size_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    if (i / per_range != bucket) {
      if (bucket != SIZE_MAX) {
        atomicMin(keys + 2 * bucket, low);
        atomicMax(keys + 2 * bucket + 1, high);
      }
      bucket = i / per_range;
      low = INT32_MAX;
      high = INT32_MIN;
    }
    low = ops::smaller(low, ops::order_key(x[i]));
    high = ops::larger(high, ops::order_key(x[i]));
  }
  if (bucket != SIZE_MAX) {
    atomicMin(keys + 2 * bucket, low);
    atomicMax(keys + 2 * bucket + 1, high);
  }
}

void wide_bucket_records(const float* x, std::uint8_t* records, std::size_t n,
                         std::size_t per_range, std::int32_t top, bool lattice, double offset,
                         std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                         cudaStream_t stream) {
  const std::size_t buckets = (n + per_range - 1) / per_range;
  std::int32_t* keys = nullptr;
  check_cuda(cudaMallocAsync(&keys, 2 * buckets * sizeof(std::int32_t), stream),
             "minmax_records_encode: allocate the ranges");
  wide_range_start<<<1, kThreads, 0, stream>>>(keys, buckets);
  const auto segments = static_cast<unsigned>((n + kWideSegment - 1) / kWideSegment);
  wide_ranges<<<segments, kThreads, 0, stream>>>(x, keys, n, per_range);
  check_cuda(cudaGetLastError(), "minmax_records_encode: ranges");
  launch(n, stream, "minmax_records_encode", [=] __device__(std::size_t i) {
    const std::size_t b = i / per_range;
    const float lo = ops::from_order_key(keys[2 * b]), hi = ops::from_order_key(keys[2 * b + 1]);
    if (i % per_range == 0) {
      ops::store_float(records + ops::record_range_at(i, per_range), lo);
      ops::store_float(records + ops::record_range_at(i, per_range) + 4, hi);
    }
    records[ops::record_index_at(i, per_range)] = ops::minmax_bucket_level(
        x[i], lo, hi, top, lattice, offset, ops::random_bits(k_low, k_high, first + i));
  });
  check_cuda(cudaFreeAsync(keys, stream), "minmax_records_encode: free the ranges");
}

}  // namespace

void minmax_records_encode(const float* x, std::uint8_t* records, std::size_t n,
                           std::size_t per_range, std::int32_t top, bool lattice, double offset,
                           std::uint32_t k_low, std::uint32_t k_high, std::uint64_t first,
                           cudaStream_t stream) {
  if (n == 0) return;
  if (per_range >= kWideBucket) {
    wide_bucket_records(x, records, n, per_range, top, lattice, offset, k_low, k_high, first, stream);
    return;
  }
  const std::size_t buckets = (n + per_range - 1) / per_range;
  const auto threads = static_cast<unsigned>(std::min<std::size_t>(kThreads, (per_range + 31) / 32 * 32));
  bucket_records<<<static_cast<unsigned>(buckets), threads, 0, stream>>>(
      x, records, n, per_range, top, lattice, offset, k_low, k_high, first);
  check_cuda(cudaGetLastError(), "minmax_records_encode");
}

void minmax_records_mean(const std::uint8_t* records, float* out, std::size_t n,
                         std::size_t per_range, std::int32_t top, double shift, std::int32_t ranks,
                         std::int32_t divide_by, cudaStream_t stream) {
  const std::size_t stride = ops::record_bytes(n, per_range);
  launch(n, stream, "minmax_records_mean", [=] __device__(std::size_t i) {
    out[i] = ops::mean_in_rank_order(ranks, divide_by, [&](std::int32_t q) {
      return ops::record_value(records + static_cast<std::size_t>(q) * stride, i, per_range, top, shift);
    });
  });
}

void fp16_encode(const float* x, std::uint16_t* h, std::size_t n, float factor,
                 cudaStream_t stream) {
  launch(n, stream, "fp16_encode",
         [=] __device__(std::size_t i) { h[i] = ops::fp16_bits(x[i] * factor); });
}

void fp16_decode(const std::uint16_t* h, float* out, std::size_t n, cudaStream_t stream) {
  launch(n, stream, "fp16_decode", [=] __device__(std::size_t i) { out[i] = ops::fp16_value(h[i]); });
}

void fp16_add(std::uint16_t* acc, const std::uint16_t* in, std::size_t n, cudaStream_t stream) {
  launch(n, stream, "fp16_add", [=] __device__(std::size_t i) {
    acc[i] = ops::fp16_bits(ops::fp16_value(acc[i]) + ops::fp16_value(in[i]));
  });
}

void fp32_add(float* acc, const float* in, std::size_t n, cudaStream_t stream) {
  launch(n, stream, "fp32_add", [=] __device__(std::size_t i) { acc[i] += in[i]; });
}

void fp32_scale(const float* x, float* out, std::size_t n, float factor, cudaStream_t stream) {
  launch(n, stream, "fp32_scale", [=] __device__(std::size_t i) { out[i] = x[i] * factor; });
}

void fp32_mean(const float* sum, float* out, std::size_t n, float ranks, double wide_step,
               cudaStream_t stream) {
  launch(n, stream, "fp32_mean",
         [=] __device__(std::size_t i) { out[i] = ops::fp32_mean_value(sum[i], ranks, wide_step); });
}

void max_abs_bits(const float* x, std::size_t n, DeviceStatus* status, cudaStream_t stream) {
  launch_with_status(n, status, stream, "max_abs_bits",
                     [=] __device__(std::size_t i, StatusShare& share) {
                       share.largest = max(share.largest, float_bits(x[i]) & 0x7FFFFFFFU);
                     });
}

namespace {

constexpr std::size_t kSquaresBlock = 1024, kLanes = 16;

// Lane j of block b: the fp32 sum of x[1024 b + j + 16 t]^2 for t = 0..63,
// in that order (kernels.cc's squares_and_largest).
__global__ void square_lanes(const float* x, std::size_t blocks, float* lanes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t t = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < blocks * kLanes; t += stride) {
    const float* at = x + t / kLanes * kSquaresBlock + t % kLanes;
    float lane = 0;
    for (std::size_t k = 0; k < kSquaresBlock; k += kLanes) lane += at[k] * at[k];
    lanes[t] = lane;
  }
}

template <class T>
std::vector<T> copy_back(const T* device, std::size_t count, cudaStream_t stream, const char* what) {
  std::vector<T> host(count);
  if (count == 0) return host;
  check_cuda(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream), what);
  wait_for_stream(stream, kDeviceTimeout, what);
  return host;
}

}  // namespace

// The CPU kernel's sum: lanes of full blocks in order (a block with a lane
// beyond fp32's range again element by element in double), then the tail.
double sum_of_squares(const float* x, std::size_t n, cudaStream_t stream) {
  const std::size_t blocks = n / kSquaresBlock;
  std::vector<float> lanes;
  if (blocks > 0) {
    float* device_lanes = nullptr;
    check_cuda(cudaMallocAsync(&device_lanes, blocks * kLanes * sizeof(float), stream), "sum_of_squares: allocate");
    square_lanes<<<blocks_for(blocks * kLanes), kThreads, 0, stream>>>(x, blocks, device_lanes);
    check_cuda(cudaGetLastError(), "sum_of_squares");
    lanes = copy_back(device_lanes, blocks * kLanes, stream, "sum_of_squares: lanes");
    check_cuda(cudaFreeAsync(device_lanes, stream), "sum_of_squares: free");
  }
  double total = 0;
  const auto add_squares = [&total](const std::vector<float>& values) {
    for (float v : values) total += static_cast<double>(v) * v;
  };
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* lane = lanes.data() + b * kLanes;
    float largest = 0;
    for (std::size_t j = 0; j < kLanes; ++j) largest = std::max(largest, lane[j]);
    if (largest <= ops::kLargestFloat) {
      for (std::size_t j = 0; j < kLanes; ++j) total += lane[j];
      continue;
    }
    add_squares(copy_back(x + b * kSquaresBlock, kSquaresBlock, stream, "sum_of_squares: block"));
  }
  add_squares(copy_back(x + blocks * kSquaresBlock, n - blocks * kSquaresBlock, stream, "sum_of_squares: tail"));
  return total;
}

}  // namespace qccl::device_kernels
