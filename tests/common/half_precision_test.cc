// The 16-bit float conversions the DDP hook writes means back with: exact
// widening, round-to-nearest-even narrowing (PyTorch's), NaN, inf and
// overflow.
#include "qccl/common/half_precision.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(HalfPrecisionTest, Bf16WideningIsTheUpperHalfOfTheFloat) {
  for (const std::uint16_t bits : {0x0000, 0x8000, 0x3F80, 0xC2F7, 0x7F80, 0x0001, 0x7F7F}) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(bf16_to_float(bits)),
              static_cast<std::uint32_t>(bits) << 16);
  }
}

TEST(HalfPrecisionTest, Bf16NarrowingRoundsToNearestEven) {
  // Below, at and above the halfway point between 0x3F80 and 0x3F81.
  EXPECT_EQ(float_to_bf16(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie, even kept part stays
  EXPECT_EQ(float_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie, odd kept part rounds up
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(float_to_bf16(from_bits(0xBF808001)), 0xBF81);  // the sign is kept
  // A carry out of the mantissa moves to the next binade, and past the
  // largest finite value to inf.
  EXPECT_EQ(float_to_bf16(from_bits(0x3FFFFFFF)), 0x4000);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7F800001)))));  // not inf
}

TEST(HalfPrecisionTest, EveryBf16ValueSurvivesARoundTrip) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = bf16_to_float(half);
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_bf16(value), half) << bits;
  }
}

TEST(HalfPrecisionTest, Fp16ArraysRoundToNearestEvenAndOverflowToInf) {
  // 1 + 2^-11 is halfway between 1 and the next fp16 (1 + 2^-10): even wins.
  const std::vector<float> in = {1.0f,   1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f,
                                 -2.5f,  65504.0f,        70000.0f,
                                 -1e6f,  0x1p-24f,        std::nanf("")};
  std::vector<std::uint16_t> half(in.size());
  narrow_to_half(HalfType::fp16, in.data(), half.data(), in.size());
  const std::vector<std::uint16_t> expected = {0x3C00, 0x3C00, 0x3C01, 0xC100, 0x7BFF,
                                               0x7C00, 0xFC00, 0x0001};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(half[i], expected[i]) << i;
  std::vector<float> back(in.size());
  widen_half(HalfType::fp16, half.data(), back.data(), half.size());
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[2], 1.0f + 0x1p-10f);
  EXPECT_EQ(back[3], -2.5f);
  EXPECT_EQ(back[7], 0x1p-24f);  // the smallest subnormal, exact
  EXPECT_TRUE(std::isinf(back[5]) && back[5] > 0);
  EXPECT_TRUE(std::isnan(back[8]));
}

TEST(HalfPrecisionTest, Bf16ArraysMatchTheScalarConversions) {
  const std::vector<float> in = {0.1f, -3.14159f, 1e-30f, 3e38f, 0.0f, -0.0f};
  std::vector<std::uint16_t> half(in.size());
  narrow_to_half(HalfType::bf16, in.data(), half.data(), in.size());
  std::vector<float> back(in.size());
  widen_half(HalfType::bf16, half.data(), back.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(half[i], float_to_bf16(in[i]));
    EXPECT_EQ(back[i], bf16_to_float(half[i]));
    EXPECT_LE(std::abs(back[i] - in[i]), std::abs(in[i]) * 0x1p-8f);  // half an ulp of 7 bits
  }
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back[5]), 0x80000000u);  // -0 stays -0
}

TEST(HalfPrecisionTest, TypeNamesParseAndOthersAreRefused) {
  EXPECT_EQ(parse_half_type("bfloat16"), HalfType::bf16);
  EXPECT_EQ(parse_half_type("float16"), HalfType::fp16);
  EXPECT_STREQ(half_type_name(HalfType::bf16), "bfloat16");
  try {
    parse_half_type("float64");
    FAIL() << "float64 accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("bfloat16 or float16"), std::string::npos);
  }
}

}  // namespace
}  // namespace qccl
