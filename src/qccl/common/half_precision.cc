#include "qccl/common/half_precision.h"

#include <bit>
#include <cmath>

#include "qccl/common/errors.h"

namespace qccl {

HalfType parse_half_type(const std::string& name) {
  if (name == "bfloat16" || name == "bf16") return HalfType::bf16;
  if (name == "float16" || name == "fp16" || name == "half") return HalfType::fp16;
  throw InvalidArgument("'" + name + "' is not a 16-bit float type: use bfloat16 or float16");
}

const char* half_type_name(HalfType type) {
  return type == HalfType::bf16 ? "bfloat16" : "float16";
}

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// Round to nearest even on the 16 bits dropped: adding 0x7FFF plus the
// lowest kept bit carries into the kept half exactly when the dropped part
// is above one half, or exactly one half with an odd kept part. A carry out
// of the mantissa moves to the next binade (or to inf), which is the right
// rounding too. NaN is kept quiet rather than rounded (it could become inf).
std::uint16_t float_to_bf16(float value) {
  if (std::isnan(value)) return 0x7FC0;
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t bias = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>((bits + bias) >> 16);
}

void widen_half(HalfType type, const std::uint16_t* in, float* out, std::size_t n) {
  if (type == HalfType::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(std::bit_cast<_Float16>(in[i]));
  }
}

void narrow_to_half(HalfType type, const float* in, std::uint16_t* out, std::size_t n) {
  if (type == HalfType::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = std::bit_cast<std::uint16_t>(static_cast<_Float16>(in[i]));  // IEEE: nearest even
  }
}

}  // namespace qccl
