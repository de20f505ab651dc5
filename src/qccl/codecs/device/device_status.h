// What the device kernels report besides their outputs (device_kernels.h):
// a record in device memory that reductions and IntSGD's rounding
// accumulate into, read once the stream is synchronised, so no launch
// blocks.
#pragma once

#include <cstdint>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::device_kernels {

struct DeviceStatus {
  std::uint32_t out_of_range;  // non-zero: some in-transit sum left its bound
  std::uint32_t largest;       // largest |level| or |sum| (IntSGD), max_abs_bits
  unsigned long long clipped;  // elements clipped (IntSGD)
};

}  // namespace qccl::device_kernels
QCCL_API_END
