#include "qccl/codecs/host_memory_vector.h"

#include <algorithm>

#include "qccl/codecs/element_form_reference.h"

namespace qccl {

double HostMemoryVector::norm_statistic(NormKind kind) { return local_norm_statistic(values_, kind); }

std::span<const std::byte> HostMemoryVector::encode(const ElementForm& form) {
  codes_.assign(form_payload_bytes(form, values_.size()), std::byte{0});
  encode_payload_by_form(form, values_, form.vector_first, codes_);
  return codes_;
}

std::span<std::byte> HostMemoryVector::result_codes(std::size_t bytes) {
  result_.assign(bytes, std::byte{0});
  return result_;
}

void HostMemoryVector::decode_range(const ElementForm& form, std::size_t first,
                                    std::size_t count) {
  const auto codes = std::span<const std::byte>(result_).subspan(form_payload_offset(form, first),
                                                                 form_payload_bytes(form, count));
  decode_payload_by_form(form, codes, first, values_.subspan(first, count));
}

void HostMemoryVector::fill_zero() { std::fill(values_.begin(), values_.end(), 0.0f); }

}  // namespace qccl
