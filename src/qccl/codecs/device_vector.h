// A vector of fp32 values in memory the host does not compute on (a GPU's),
// with the element-wise work a codec step needs done there. A step on it
// (Codec::allreduce_mean(Communicator&, DeviceVector&)) takes the norm
// statistic and the encoding where the data is, passes only the encoded
// codes through host memory to the collective, and decodes the mean where
// the data is: nothing at full precision crosses to the host. The work is
// described by the step's ElementForm (collectives/element_form.h), which
// an implementation runs with the functions of codecs/kernels/element_ops.h
// (HostMemoryVector on the host, codecs/device/cuda_vector.h on a GPU), so
// every implementation gives the same bytes.
#pragma once

#include <cstddef>
#include <span>

#include "qccl/codecs/global_norm.h"
#include "qccl/collectives/element_form.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class DeviceVector {
 public:
  virtual ~DeviceVector() = default;

  virtual std::size_t size() const = 0;
  // local_norm_statistic of the values for `kind`, the same double: NaN
  // when some value is not finite.
  virtual double norm_statistic(NormKind kind) = 0;
  // The codes of the whole vector by `form` (element i drawing with
  // counter i; no chunk header), in host memory the vector owns, valid
  // until its next call.
  virtual std::span<const std::byte> encode(const ElementForm& form) = 0;
  // Host memory the vector owns, `bytes` long, for the result's codes.
  virtual std::span<std::byte> result_codes(std::size_t bytes) = 0;
  // Replaces the values by what result_codes stand for (the mean) under `form`.
  virtual void decode_result(const ElementForm& form) = 0;
  // Sets every value to zero (every rank's input was zero: nothing moved).
  virtual void fill_zero() = 0;
};

}  // namespace qccl
QCCL_API_END
