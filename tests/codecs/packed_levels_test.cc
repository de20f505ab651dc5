// The 4-bit linear dithering paths work one L1-sized block at a time
// (encode and pack, unpack and decode, unpack, average and pack). Across
// block boundaries, with odd counts and offsets, they must give exactly what
// one pass over the whole unpacked vector gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../support/patterns.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/quantizers/linear_dither.h"

namespace qccl {
namespace {

// Several 4096-element blocks and an odd tail.
constexpr std::size_t kCount = 3 * 4096 + 1001;

std::vector<float> input(int seed) {
  return test::make_vector(kCount, [seed](std::size_t i) {
    return test::noise(seed, i) * std::ldexp(1.0f, -static_cast<int>(i % 5));
  });
}

std::vector<std::uint8_t> packed_of(const std::vector<std::int8_t>& q) {
  std::vector<std::uint8_t> packed((q.size() + 1) / 2);
  kernels::pack_i4(q.data(), packed.data(), q.size());
  return packed;
}

TEST(PackedLevelsTest, EncodeMatchesOnePassThenPack) {
  const CounterRng rng(3, 4, 5, 6, RngStream::quantize);
  const auto x = input(1);
  // A usual norm (the vectorised kernel), a tiny one (fp32 scale overflows)
  // and a huge one (scale below fp32's normal range): every rounding path.
  for (double norm : {1.0, 1e-39, 1e39}) {
    std::vector<std::int8_t> whole(kCount);
    encode_levels(x, 777, whole.data(), norm, 7, rng);
    std::vector<std::uint8_t> packed((kCount + 1) / 2, 0xFF);
    encode_levels_i4(x, 777, packed.data(), norm, 7, rng);
    ASSERT_EQ(packed, packed_of(whole)) << norm;
  }
}

TEST(PackedLevelsTest, DecodeMatchesUnpackThenOnePass) {
  std::vector<std::int8_t> q(kCount);
  for (std::size_t i = 0; i < kCount; ++i) q[i] = static_cast<std::int8_t>(static_cast<int>(i % 15) - 7);
  const auto packed = packed_of(q);
  for (double step : {0.125, 1e39}) {  // an fp32 step, and one beyond fp32 (decoded in double)
    std::vector<float> expected(kCount), got(kCount);
    decode_levels(q.data(), expected.data(), kCount, step);
    decode_levels_i4(packed.data(), got.data(), kCount, step);
    ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), kCount * sizeof(float))) << step;
  }
}

TEST(PackedLevelsTest, AveragingStepMatchesUnpackAverageThenPack) {
  const CounterRng quantize(7, 1, 0, 0, RngStream::quantize);
  const CodecSettings settings{11, 0};
  auto reduction = make_linear_average_reduction("t", 1.0, 4, 4, quantize, settings, 2);
  std::vector<std::byte> a(reduction->max_encoded_bytes(kCount)), b(a.size());
  ASSERT_EQ(reduction->encode(input(2), 0, a), a.size());
  ASSERT_EQ(reduction->encode(input(3), 0, b), b.size());

  // The definition: the kernel on the whole unpacked vectors.
  std::vector<std::int8_t> qa(kCount), qb(kCount);
  kernels::unpack_i4(reinterpret_cast<const std::uint8_t*>(a.data()) + 4, qa.data(), kCount);
  kernels::unpack_i4(reinterpret_cast<const std::uint8_t*>(b.data()) + 4, qb.data(), kCount);
  const ReduceContext context{5000, kCount, 1, 0};
  const CounterRng rng = reduce_rng(settings, 2, context);
  kernels::average_i8(qa.data(), qb.data(), qa.data(), kCount, 1, 1, rng.key_low(), rng.key_high(),
                      context.first);

  reduction->reduce(b, a, a.size(), context);
  std::uint32_t k;
  std::memcpy(&k, a.data(), 4);
  EXPECT_EQ(k, 2U);
  const auto expected = packed_of(qa);
  ASSERT_EQ(0, std::memcmp(a.data() + 4, expected.data(), expected.size()));
}

}  // namespace
}  // namespace qccl
