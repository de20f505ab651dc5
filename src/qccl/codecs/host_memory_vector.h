// A DeviceVector in host memory: the caller's fp32 values, with the
// element-wise work done by the host reference of the element forms
// (element_form_reference.h). It is what a device implementation must
// equal, byte for byte, and what lets the device step's data path (staged
// codes, the collective, the decode) run and be tested without a GPU.
#pragma once

#include <span>
#include <vector>

#include "qccl/codecs/device_vector.h"

namespace qccl {

class HostMemoryVector final : public DeviceVector {
 public:
  explicit HostMemoryVector(std::span<float> values) : values_(values) {}

  std::size_t size() const override { return values_.size(); }
  double norm_statistic(NormKind kind) override;
  // Encodes at once: every code is ready when encode returns.
  std::span<const std::byte> encode(const ElementForm& form) override;
  void codes_ready(std::size_t, std::size_t) override {}
  std::span<std::byte> result_codes(std::size_t bytes) override;
  void decode_range(const ElementForm& form, std::size_t first, std::size_t count) override;
  void finish_decoding() override {}
  void fill_zero() override;

 private:
  std::span<float> values_;
  std::vector<std::byte> codes_, result_;
};

}  // namespace qccl
