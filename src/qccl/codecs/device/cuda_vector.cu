// CudaVector: the element forms' work as device kernels (device_kernels.h),
// each element computed by the function the host reference uses, so the
// codes and the decoded mean are the host's bytes.
#include "qccl/codecs/device/cuda_vector.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/device_kernels.h"
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

// kPieceElements, or whole min-max buckets (records start at a bucket's).
std::size_t piece_elements(const ElementForm& form) {
  if (form.code != Code::minmax_gathered) return CudaVector::kPieceElements;
  const std::size_t per_range = form.values_per_range;
  return std::max(per_range, CudaVector::kPieceElements / per_range * per_range);
}

}  // namespace

CudaVector::CudaVector(float* values, std::size_t count, cudaStream_t stream,
                       std::chrono::milliseconds timeout)
    : values_(values), count_(count), stream_(stream), timeout_(timeout) {}

CudaVector::~CudaVector() {
  try {
    wait(copy_stream_.get(), "the codes' copies, at the vector's end");
    wait(stream_, "the decoding, at the vector's end");
  } catch (...) {  // a destructor cannot raise; the step already reported the failure
  }
}

void CudaVector::bind(float* values, std::size_t count, cudaStream_t stream) {
  wait(copy_stream_.get(), "the previous step's copies");
  wait(stream_, "the previous step's decoding");
  values_ = values;
  count_ = count;
  stream_ = stream;
}

void CudaVector::wait(cudaStream_t stream, const char* what) const {
  wait_for_stream(stream, timeout_, what);
}

dk::DeviceStatus CudaVector::read_status(const char* what) {
  dk::DeviceStatus status{};
  check_cuda(cudaMemcpyAsync(&status, status_.data(), sizeof status, cudaMemcpyDeviceToHost, stream_), what);
  wait(stream_, what);
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

// Elements [first, first + count) into their codes at the payload's offset
// (element i is the step's form.vector_first + i, drawing with that
// counter, as the host encoding of the whole vector or shard).
void CudaVector::encode_piece(const ElementForm& form, std::size_t first, std::size_t count,
                              std::byte* codes) {
  const float* x = values_ + first;
  std::byte* out = codes + form_payload_offset(form, first);
  const std::size_t index = form.vector_first + first;
  switch (form.code) {
    case Code::linear_i8_summed:
    case Code::linear_i8_averaged:
      dk::linear_encode_i8(x, reinterpret_cast<std::int8_t*>(out), count, form.scale, form.levels,
                           form.key_low, form.key_high, index, stream_);
      break;
    case Code::linear_i4_averaged:
      dk::linear_encode_i4(x, reinterpret_cast<std::uint8_t*>(out), count, form.scale, form.levels,
                           form.key_low, form.key_high, index, stream_);
      break;
    case Code::exp_i8:
      dk::exp_encode(x, reinterpret_cast<std::uint8_t*>(out), count, form.scale, form.headroom,
                     form.levels, form.key_low, form.key_high, index, stream_);
      break;
    case Code::fp16:
      dk::fp16_encode(x, reinterpret_cast<std::uint16_t*>(out), count, form.scale, stream_);
      break;
    case Code::fp32_summed:
      dk::fp32_scale(x, reinterpret_cast<float*>(out), count, form.scale, stream_);
      break;
    case Code::int_i8_summed:
    case Code::int_i32_summed:
    case Code::int_i64_summed:
      // One launch per tensor the piece holds (IntSGD's α per tensor); the
      // clipped counts go to the status, which the step does not read.
      for_each_form_block(form, index, count, [&](const IntegerBlock* block, std::size_t offset, std::size_t n) {
        const auto clip = static_cast<std::int32_t>(form.clip);  // the narrow wires' c fits
        if (form.code == Code::int_i8_summed) {
          dk::int_round_i8(x + offset, reinterpret_cast<std::int8_t*>(out) + offset, n, block->fast_alpha(),
                           clip, form.random_rounding, form.key_low, form.key_high,
                           index + offset, status_.data(), stream_);
        } else if (form.code == Code::int_i32_summed) {
          dk::int_round_i32(x + offset, reinterpret_cast<std::int32_t*>(out) + offset, n, block->fast_alpha(),
                            clip, form.random_rounding, form.key_low, form.key_high,
                            index + offset, status_.data(), stream_);
        } else {
          dk::int_round_i64(x + offset, reinterpret_cast<std::int64_t*>(out) + offset, n, block->alpha,
                            form.clip, form.random_rounding, form.key_low, form.key_high,
                            index + offset, status_.data(), stream_);
        }
      });
      break;
    case Code::minmax_gathered:
      dk::minmax_records_encode(x, reinterpret_cast<std::uint8_t*>(out), count, form.values_per_range,
                                form.levels, form.lattice, form.lattice_offset, form.key_low,
                                form.key_high, index, stream_);
      break;
  }
}

// Piece by piece: encode piece k on the producer's stream, then copy its
// codes to the host on the copy stream (after the encoding, by an event)
// while piece k + 1 is encoded. Nothing waits here; codes_ready does.
std::span<const std::byte> CudaVector::encode(const ElementForm& form) {
  wait(copy_stream_.get(), "the previous step's copies");  // the pinned buffer is reused
  const std::size_t bytes = form_payload_bytes(form, count_);
  if (codes_.size() < bytes) codes_ = DeviceBuffer<std::byte>(bytes);
  std::byte* host = at_least(codes_host_, bytes).data();
  piece_elements_ = piece_elements(form);
  const std::size_t pieces = (count_ + piece_elements_ - 1) / piece_elements_;
  while (copied_.size() < pieces) copied_.emplace_back();
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t first = k * piece_elements_;
    const std::size_t count = std::min(piece_elements_, count_ - first);
    encode_piece(form, first, count, codes_.data());
    check_cuda(cudaEventRecord(encoded_.get(), stream_), "marking a piece encoded");
    check_cuda(cudaStreamWaitEvent(copy_stream_.get(), encoded_.get(), 0), "ordering a piece's copy");
    const std::size_t offset = form_payload_offset(form, first);
    check_cuda(cudaMemcpyAsync(host + offset, codes_.data() + offset, form_payload_bytes(form, count),
                               cudaMemcpyDeviceToHost, copy_stream_.get()),
               "copying codes to the host");
    check_cuda(cudaEventRecord(copied_[k].get(), copy_stream_.get()), "marking a piece copied");
  }
  pieces_ready_ = 0;
  return {host, bytes};
}

// The copies finish in order (one stream): waiting for the range's last
// piece waits for all before it.
void CudaVector::codes_ready(std::size_t first, std::size_t count) {
  if (count == 0) return;
  const std::size_t last = (first + count - 1) / piece_elements_;
  if (last < pieces_ready_) return;
  wait_for_event(copied_[last].get(), timeout_, "encoding on the device and copying the codes");
  pieces_ready_ = last + 1;
}

// The previous step's finish_decoding waited for its copies from the
// pinned buffer; waiting on the producer's stream here would also wait for
// this step's encoding, which the collective overlaps.
std::span<std::byte> CudaVector::result_codes(std::size_t bytes) {
  result_bytes_ = bytes;
  if (result_device_.size() < bytes) result_device_ = DeviceBuffer<std::byte>(bytes);
  return {at_least(result_host_, bytes).data(), bytes};
}

// On the producer's stream, after everything queued there: the range's
// codes to the device, then its decoding. Returns at once.
void CudaVector::decode_range(const ElementForm& form, std::size_t first, std::size_t count) {
  if (count == 0) return;
  const std::size_t offset = form_payload_offset(form, first);
  const std::size_t bytes = form_payload_bytes(form, count);
  if (offset + bytes > result_bytes_) {
    throw Error("CudaVector: decoding elements beyond the result's codes (a bug in the device "
                "step: report it)");
  }
  std::byte* codes = result_device_.data() + offset;
  check_cuda(cudaMemcpyAsync(codes, result_host_.data() + offset, bytes, cudaMemcpyHostToDevice, stream_),
             "copying the result's codes to the device");
  float* out = values_ + first;
  switch (form.code) {
    case Code::linear_i8_summed:
    case Code::linear_i8_averaged:
      dk::linear_decode_i8(reinterpret_cast<const std::int8_t*>(codes), out, count, form.mean_step, stream_);
      break;
    case Code::linear_i4_averaged:
      dk::linear_decode_i4(reinterpret_cast<const std::uint8_t*>(codes), out, count, form.mean_step, stream_);
      break;
    case Code::exp_i8:
      dk::exp_decode(reinterpret_cast<const std::uint8_t*>(codes), out, count, form.headroom, form.mean_step,
                     stream_);
      break;
    case Code::fp16:  // the fp16 sum of x/n is the mean (its step is 1)
      dk::fp16_decode(reinterpret_cast<const std::uint16_t*>(codes), out, count, stream_);
      break;
    case Code::fp32_summed:
      dk::fp32_mean(reinterpret_cast<const float*>(codes), out, count, static_cast<float>(form.ranks),
                    form.wide_mean_step, stream_);
      break;
    case Code::int_i8_summed:
    case Code::int_i32_summed:
    case Code::int_i64_summed:
      for_each_form_block(form, form.vector_first + first, count,
                          [&](const IntegerBlock* block, std::size_t offset, std::size_t n) {
                            if (form.code == Code::int_i8_summed) {
                              dk::int_decode_i8(reinterpret_cast<const std::int8_t*>(codes) + offset, out + offset, n,
                                                block->fast_mean_step(), status_.data(), stream_);
                            } else if (form.code == Code::int_i32_summed) {
                              dk::int_decode_i32(reinterpret_cast<const std::int32_t*>(codes) + offset,
                                                 out + offset, n, block->fast_mean_step(), status_.data(), stream_);
                            } else {
                              dk::int_decode_i64(reinterpret_cast<const std::int64_t*>(codes) + offset,
                                                 out + offset, n, block->mean_step, stream_);
                            }
                          });
      break;
    case Code::minmax_gathered:
      dk::minmax_records_mean(reinterpret_cast<const std::uint8_t*>(codes), out, count,
                              form.values_per_range, form.levels, form.shift, form.ranks,
                              form.divide_by, stream_);
      break;
  }
}

// The pinned buffers are reused by the next step: every copy must be done.
void CudaVector::finish_decoding() {
  wait(copy_stream_.get(), "copying codes to the host");
  wait(stream_, "decoding on the device");
}

void CudaVector::fill_zero() {
  if (count_ > 0) check_cuda(cudaMemsetAsync(values_, 0, count_ * sizeof(float), stream_), "cudaMemsetAsync");
  wait(stream_, "zeroing on the device");
}

}  // namespace qccl
