// A DeviceVector (codecs/device_vector.h) on a CUDA device: the caller's
// fp32 values in device memory and the stream their producer ran on, so
// that the codec's kernels run after it. Codes go to and come from pinned
// host buffers the vector keeps between steps (grown when a step needs
// more), in pieces: piece k's codes are copied to the host on a second
// stream while piece k + 1 is encoded, and the collective may send piece
// k's chunks meanwhile; each finished chunk is copied back and decoded
// while the collective moves the others. Every wait has a deadline.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <vector>

#include "qccl/codecs/device/cuda_check.h"
#include "qccl/codecs/device/cuda_stream.h"
#include "qccl/codecs/device/device_buffer.h"
#include "qccl/codecs/device/device_status.h"
#include "qccl/codecs/device_vector.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class CudaVector final : public DeviceVector {
 public:
  // Elements per piece of the encoding's pipeline (even, for packed codes;
  // min-max's pieces are whole buckets, the most that fit in this many).
  static constexpr std::size_t kPieceElements = std::size_t{1} << 20;

  // `values`: `count` floats in device memory of the current device.
  CudaVector(float* values, std::size_t count, cudaStream_t stream,
             std::chrono::milliseconds timeout = kDeviceTimeout);
  // Points the vector at other values (and the stream that produced them)
  // for the next step, keeping its streams, events and buffers, so that a
  // caller with a step per bucket (the DDP hook) allocates device and
  // pinned memory once, not per step. Waits for the previous step's work.
  void bind(float* values, std::size_t count, cudaStream_t stream);
  // Waits (up to the timeout) for the copies still in flight into the
  // pinned buffers, which go with the vector.
  ~CudaVector() override;
  CudaVector(const CudaVector&) = delete;
  CudaVector& operator=(const CudaVector&) = delete;

  std::size_t size() const override { return count_; }
  double norm_statistic(NormKind kind) override;
  std::span<const std::byte> encode(const ElementForm& form) override;
  void codes_ready(std::size_t first, std::size_t count) override;
  std::span<std::byte> result_codes(std::size_t bytes) override;
  void decode_range(const ElementForm& form, std::size_t first, std::size_t count) override;
  void finish_decoding() override;
  void fill_zero() override;

 private:
  // Blocks until the stream's work is done, or throws TimeoutError.
  void wait(cudaStream_t stream, const char* what) const;
  void encode_piece(const ElementForm& form, std::size_t first, std::size_t count, std::byte* codes);
  device_kernels::DeviceStatus read_status(const char* what);

  float* values_;
  std::size_t count_;
  cudaStream_t stream_;
  std::chrono::milliseconds timeout_;
  CudaStream copy_stream_;          // the codes' copies to the host
  CudaEvent encoded_;               // the latest piece's encoding, which its copy waits for
  std::vector<CudaEvent> copied_;   // piece k's codes are on the host
  std::size_t piece_elements_ = kPieceElements;  // this step's elements per piece
  std::size_t pieces_ready_ = 0;    // pieces known to be on the host
  DeviceBuffer<std::byte> codes_{0}, result_device_{0};
  DeviceBuffer<device_kernels::DeviceStatus> status_{1};
  PinnedHostBuffer codes_host_, result_host_;
  std::size_t result_bytes_ = 0;
};

}  // namespace qccl
QCCL_API_END
