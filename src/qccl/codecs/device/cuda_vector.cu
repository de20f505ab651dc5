// CudaVector: the element forms' work as device kernels (device_kernels.h),
// each element computed by the function the host reference uses, so the
// codes and the decoded mean are the host's bytes.
#include "qccl/codecs/device/cuda_vector.h"

#include <cmath>
#include <limits>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/element_form_reference.h"
#include "qccl/common/host_device.h"

namespace qccl {
namespace {

namespace dk = device_kernels;
using Code = ElementForm::Code;

// A pinned buffer of at least `bytes` (kept when large enough).
PinnedHostBuffer& at_least(PinnedHostBuffer& buffer, std::size_t bytes) {
  if (buffer.size() < bytes) buffer = PinnedHostBuffer(bytes);
  return buffer;
}

}  // namespace

CudaVector::CudaVector(float* values, std::size_t count, cudaStream_t stream,
                       std::chrono::milliseconds timeout)
    : values_(values), count_(count), stream_(stream), timeout_(timeout) {}

void CudaVector::wait(const char* what) const { wait_for_stream(stream_, timeout_, what); }

std::byte* CudaVector::device_codes(std::size_t bytes) {
  if (codes_.size() < bytes) codes_ = DeviceBuffer<std::byte>(bytes);
  return codes_.data();
}

dk::DeviceStatus CudaVector::read_status(const char* what) {
  dk::DeviceStatus status{};
  check_cuda(cudaMemcpyAsync(&status, status_.data(), sizeof status, cudaMemcpyDeviceToHost, stream_), what);
  wait(what);
  return status;
}

// local_norm_statistic's value: the largest |x| or Σx² (the CPU's summation
// order), NaN when the largest magnitude's bits say Inf or NaN.
double CudaVector::norm_statistic(NormKind kind) {
  check_cuda(cudaMemsetAsync(status_.data(), 0, sizeof(dk::DeviceStatus), stream_), "norm statistic");
  dk::max_abs_bits(values_, count_, status_.data(), stream_);
  const std::uint32_t largest = read_status("the largest magnitude").largest;
  if (largest >= 0x7F800000U) return std::numeric_limits<double>::quiet_NaN();
  if (kind == NormKind::inf) return float_from_bits(largest);
  return dk::sum_of_squares(values_, count_, stream_);
}

std::span<const std::byte> CudaVector::encode(const ElementForm& form) {
  const std::size_t bytes = form_payload_bytes(form, count_);
  std::byte* codes = device_codes(bytes);
  switch (form.code) {
    case Code::linear_i8_summed:
    case Code::linear_i8_averaged:
      dk::linear_encode_i8(values_, reinterpret_cast<std::int8_t*>(codes), count_, form.scale, form.levels,
                           form.key_low, form.key_high, 0, stream_);
      break;
    case Code::linear_i4_averaged:
      dk::linear_encode_i4(values_, reinterpret_cast<std::uint8_t*>(codes), count_, form.scale, form.levels,
                           form.key_low, form.key_high, 0, stream_);
      break;
    case Code::exp_i8:
      dk::exp_encode(values_, reinterpret_cast<std::uint8_t*>(codes), count_, form.scale, form.headroom,
                     form.levels, form.key_low, form.key_high, 0, stream_);
      break;
    case Code::fp16:
      dk::fp16_encode(values_, reinterpret_cast<std::uint16_t*>(codes), count_, form.scale, stream_);
      break;
  }
  std::byte* host = at_least(codes_host_, bytes).data();
  if (bytes > 0) {
    check_cuda(cudaMemcpyAsync(host, codes, bytes, cudaMemcpyDeviceToHost, stream_), "copying codes to the host");
  }
  wait("encoding on the device");
  return {host, bytes};
}

std::span<std::byte> CudaVector::result_codes(std::size_t bytes) {
  result_bytes_ = bytes;
  return {at_least(result_host_, bytes).data(), bytes};
}

void CudaVector::decode_result(const ElementForm& form) {
  std::byte* codes = device_codes(result_bytes_);
  if (result_bytes_ > 0) {
    check_cuda(cudaMemcpyAsync(codes, result_host_.data(), result_bytes_, cudaMemcpyHostToDevice, stream_),
               "copying the result's codes to the device");
  }
  switch (form.code) {
    case Code::linear_i8_summed:
    case Code::linear_i8_averaged:
      dk::linear_decode_i8(reinterpret_cast<const std::int8_t*>(codes), values_, count_, form.mean_step, stream_);
      break;
    case Code::linear_i4_averaged:
      dk::linear_decode_i4(reinterpret_cast<const std::uint8_t*>(codes), values_, count_, form.mean_step, stream_);
      break;
    case Code::exp_i8:
      dk::exp_decode(reinterpret_cast<const std::uint8_t*>(codes), values_, count_, form.headroom, form.mean_step,
                     stream_);
      break;
    case Code::fp16:  // the fp16 sum of x/n is the mean (its step is 1)
      dk::fp16_decode(reinterpret_cast<const std::uint16_t*>(codes), values_, count_, stream_);
      break;
  }
  // The pinned result buffer is reused by the next step: the copy must be done.
  wait("decoding on the device");
}

void CudaVector::fill_zero() {
  if (count_ > 0) check_cuda(cudaMemsetAsync(values_, 0, count_ * sizeof(float), stream_), "cudaMemsetAsync");
  wait("zeroing on the device");
}

}  // namespace qccl
