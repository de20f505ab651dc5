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
  // Starts encoding the whole vector by `form` (element i is the step's
  // element form.vector_first + i, drawing with that counter; no chunk
  // header) into host memory the vector owns, and
  // returns that memory, valid until the next encode. The codes of
  // elements [first, first + count) may be read once codes_ready(first,
  // count) has returned: a device fills them piece by piece, so the
  // collective sends the first pieces while the later ones are encoded and
  // copied.
  virtual std::span<const std::byte> encode(const ElementForm& form) = 0;
  virtual void codes_ready(std::size_t first, std::size_t count) = 0;
  // Host memory the vector owns, `bytes` long, for the result's codes.
  virtual std::span<std::byte> result_codes(std::size_t bytes) = 0;
  // Starts replacing values [first, first + count) by what their codes in
  // result_codes stand for (the mean) under `form`; those codes are final
  // and stay unchanged until finish_decoding. A device copies and decodes
  // such a range while the collective goes on with the others.
  virtual void decode_range(const ElementForm& form, std::size_t first, std::size_t count) = 0;
  // Returns once every decode_range started is done.
  virtual void finish_decoding() = 0;
  // The whole vector from result_codes: decode_range of every element,
  // then finish_decoding.
  void decode_result(const ElementForm& form) {
    decode_range(form, 0, size());
    finish_decoding();
  }
  // Sets every value to zero (every rank's input was zero: nothing moved).
  virtual void fill_zero() = 0;
};

}  // namespace qccl
QCCL_API_END
