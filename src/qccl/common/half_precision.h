// Conversions between fp32 and the two 16-bit float types that training
// keeps gradients in: bfloat16 (fp32's exponent, 7 mantissa bits) and IEEE
// fp16. Widening is exact. Narrowing rounds to nearest, ties to even, as
// PyTorch's own tensor casts round, so a mean written back here equals
// `tensor.copy_(fp32)`; NaN stays NaN and values past fp16's range become
// ±inf. The DDP hook uses these to average a half-precision bucket one
// chunk at a time, without an fp32 copy of the whole bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qccl {

enum class HalfType { bf16, fp16 };

// "bfloat16"/"bf16" or "float16"/"fp16"/"half"; anything else is refused,
// naming the types accepted.
HalfType parse_half_type(const std::string& name);
const char* half_type_name(HalfType type);

float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);

// out[i] = float(in[i]) and out[i] = half(in[i]) for n elements of `type`
// stored as 16-bit words.
void widen_half(HalfType type, const std::uint16_t* in, float* out, std::size_t n);
void narrow_to_half(HalfType type, const float* in, std::uint16_t* out, std::size_t n);

}  // namespace qccl
