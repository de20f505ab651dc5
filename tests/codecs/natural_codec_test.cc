// Natural compression (C_nat): outputs the two neighbouring powers of two
// of each input, a reference power for the whole fp32 range; corrupt
// chunks of TernGrad and C_nat rejected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

bool is_signed_power_of_two(float v) {
  int e = 0;
  return v != 0 && std::frexp(std::abs(v), &e) == 0.5f;
}

using ::testing::HasSubstr;

// C_nat on one rank: every output is zero or a signed power of two; a
// power of two stays as it is; any other |x| in [2^e, 2^(e+1)) becomes
// one of those two with x's sign; below the window (2^-126 of the
// reference power, here 1) an element becomes 0 or that smallest power.
// The same holds for each rank's own contribution on several ranks.
void expect_natural_neighbours(std::span<const float> x, std::span<const float> c, float smallest) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float a = std::abs(x[i]);
    if (a == 0) {
      ASSERT_EQ(c[i], 0.0f);
      continue;
    }
    if (a < smallest) {
      ASSERT_TRUE(c[i] == 0 || c[i] == std::copysign(smallest, x[i])) << x[i] << " -> " << c[i];
      continue;
    }
    ASSERT_TRUE(is_signed_power_of_two(c[i])) << c[i];
    ASSERT_EQ(std::signbit(c[i]), std::signbit(x[i]));
    int e = 0;
    std::frexp(a, &e);
    const float low = std::ldexp(1.0f, e - 1);
    if (a == low) {
      ASSERT_EQ(c[i], x[i]);
    } else {
      ASSERT_TRUE(std::abs(c[i]) == low || std::abs(c[i]) == 2 * low) << x[i] << " -> " << c[i];
    }
  }
}

TEST(NaturalCodecTest, OutputsAreTheTwoNeighbouringPowersOfTwo) {
  auto input = [](int r) {
    return make_vector(4000, [&](std::size_t i) {
      if (i % 11 == 0) return std::ldexp(i % 2 ? 1.0f : -1.0f, -static_cast<int>(i % 60));
      if (i % 13 == 0) return noise(r, i) * 0x1p-127f;  // below the window
      return i == 3 ? 1.0f : noise(r, i) * std::ldexp(1.0f, -static_cast<int>(i % 40));
    });
  };
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("natural");
    for (int round = 0; round < 20; ++round) {
      auto data = input(0);
      codec->allreduce_mean(comm, data);
      expect_natural_neighbours(input(0), data, 0x1p-126f);
    }
  });
  run_world(3, [&](Communicator& comm) {
    auto codec = make_codec("natural");
    auto data = input(comm.rank());
    std::vector<float> own(data.size());
    codec->allreduce_mean(comm, data, {}, own);
    expect_natural_neighbours(input(comm.rank()), own, 0x1p-126f);
  });
}

// The reference power is the smallest power of two >= the global max:
// 2^127 is the largest that fp32 holds (2^127 itself is kept exactly;
// anything larger is refused on every rank); for tiny maxima the window
// ends at 2^-149, so every non-zero subnormal is in it.
TEST(NaturalCodecTest, ReferencePowerCoversTheWholeFp32Range) {
  run_world(1, [](Communicator& comm) {
    auto codec = make_codec("natural");
    std::vector<float> largest{0x1p127f, -0x1p127f, 0x1p100f};
    codec->allreduce_mean(comm, largest);
    EXPECT_EQ(largest, (std::vector<float>{0x1p127f, -0x1p127f, 0x1p100f}));
    std::vector<float> beyond{0x1.8p127f};
    EXPECT_THAT([&] { codec->allreduce_mean(comm, beyond); },
                ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("exceeds 2^127")));
    for (int round = 0; round < 20; ++round) {
      const std::vector<float> tiny{3 * 0x1p-149f, 0x1p-149f, -5 * 0x1p-149f, 0.0f};
      auto data = tiny;
      codec->allreduce_mean(comm, data);
      expect_natural_neighbours(tiny, data, 0x1p-149f);
    }
  });
}

// Corrupt or truncated chunks are rejected with a CommError, never read out
// of bounds; an int8 mean over more than 127 ranks is refused.
TEST(UnbiasedCodecsTest, CorruptChunksAreRejected) {
  const std::vector<float> x{0.5f, -1.0f, 0.25f, 0.0f, 0.75f};
  std::vector<float> out(x.size());
  {
    auto encoding = make_codec("terngrad")->encoding_for(1.0, 3, 0, Algorithm::ring);
    ASSERT_NE(encoding->in_transit(), nullptr);  // int8 sums in transit
    Reduction* reduction = encoding->in_transit();
    std::vector<std::byte> a(5), b(5, std::byte{100});
    reduction->encode(x, 0, a);
    EXPECT_THROW(reduction->reduce(b, a, a.size(), {0, 5, 1, 0}), CommError);
    EXPECT_THROW(reduction->decode(std::span(a).first(4), 0, out), CommError);
    EXPECT_THROW(make_codec("terngrad")->encoding_for(1.0, 128, 0, Algorithm::ring), InvalidArgument);
  }
  {
    auto reduction = make_codec("terngrad:wire=2bit")->encoding_for(1.0, 200, 0, Algorithm::ring);
    std::vector<std::byte> codes(2);
    ASSERT_EQ(reduction->encode(x, 0, codes), 2u);
    reduction->decode(codes, 0, out);  // valid
    auto bad = codes;
    bad[0] = (bad[0] & std::byte{0xFC}) | std::byte{0b10};
    EXPECT_THROW(reduction->decode(bad, 0, out), CommError);
    bad = codes;
    bad[1] |= std::byte{0x40};  // beyond the fifth code
    EXPECT_THROW(reduction->decode(bad, 0, out), CommError);
    EXPECT_THROW(reduction->decode(std::span(codes).first(1), 0, out), CommError);
  }
  {
    auto reduction = make_codec("natural")->encoding_for(1.0, 2, 0, Algorithm::ring);
    std::vector<std::byte> codes(5);
    reduction->encode(x, 0, codes);
    reduction->decode(codes, 0, out);  // valid
    auto bad = codes;
    bad[3] = std::byte{0x80};  // a signed zero is never written
    EXPECT_THROW(reduction->decode(bad, 0, out), CommError);
    EXPECT_THROW(reduction->decode(std::span(codes).first(4), 0, out), CommError);
    // A maximum of 2^-140 leaves a window of 10 powers, down to 2^-149.
    auto tiny = make_codec("natural")->encoding_for(0x1p-140, 2, 0, Algorithm::ring);
    std::vector<std::byte> beyond(5, std::byte{11});
    EXPECT_THROW(tiny->decode(beyond, 0, out), CommError);
    beyond.assign(5, std::byte{10});
    tiny->decode(beyond, 0, out);
    EXPECT_EQ(out[0], 0x1p-149f);
  }
}

}  // namespace
}  // namespace qccl::test
