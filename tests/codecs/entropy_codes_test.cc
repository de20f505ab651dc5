// The lossless codes under Q-GenX's entropy coding (§3.2, Appendix K):
// Huffman codes round-trip, respect their length limit and Kraft's
// inequality, and stay within one bit of the entropy; Elias omega codes
// round-trip with their closed-form lengths; truncated streams fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "qccl/codecs/entropy/entropy_codes.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

std::vector<std::size_t> draw_symbols(std::span<const double> p, std::size_t count) {
  const CounterRng rng(3, 0, 0, 0, RngStream::data);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    double u = rng.uniform(i), c = 0;
    std::size_t s = 0;
    while (s + 1 < p.size() && u >= c + p[s]) c += p[s++];
    out.push_back(s);
  }
  return out;
}

TEST(PrefixCodeTest, DyadicProbabilitiesGetTheirExactLengths) {
  const std::vector<double> p{0.5, 0.25, 0.125, 0.125};
  const auto code = PrefixCode::from_probabilities(p, 24);
  EXPECT_EQ(code.lengths(), (std::vector<std::uint8_t>{1, 2, 3, 3}));
  EXPECT_DOUBLE_EQ(code.expected_length(p), entropy_bits(p));
}

TEST(PrefixCodeTest, RoundTripsAndStaysWithinOneBitOfTheEntropy) {
  std::vector<double> p(128);
  double total = 0;
  for (std::size_t j = 0; j < p.size(); ++j) total += p[j] = std::exp(-0.15 * static_cast<double>(j));
  for (double& x : p) x /= total;
  const auto code = PrefixCode::from_probabilities(p, 24);
  const double h = entropy_bits(p);
  EXPECT_GE(code.expected_length(p), h);
  EXPECT_LT(code.expected_length(p), h + 1);
  const auto symbols = draw_symbols(p, 20000);
  std::vector<std::byte> buffer(20000 * 4);
  BitWriter writer(buffer);
  for (std::size_t s : symbols) ASSERT_TRUE(code.put(writer, s));
  const std::size_t bytes = writer.finish();
  BitReader reader(std::span<const std::byte>(buffer).first(bytes), "test");
  for (std::size_t s : symbols) ASSERT_EQ(code.get(reader), s);
  EXPECT_EQ(reader.consumed(), bytes);
}

TEST(PrefixCodeTest, LimitsLengthsKeepsKraftAndEverySymbolEncodable) {
  // Fibonacci-like weights make Huffman's tree as deep as the alphabet.
  std::vector<double> p(40);
  double a = 1, b = 1;
  for (double& x : p) {
    x = a;
    const double c = a + b;
    a = b;
    b = c;
  }
  p[3] = 0;  // estimated never to occur
  for (int limit : {6, 8, 12}) {
    const auto code = PrefixCode::from_probabilities(p, limit);
    double kraft = 0;
    for (std::uint8_t l : code.lengths()) {
      EXPECT_GE(l, 1);
      EXPECT_LE(l, limit);
      kraft += std::ldexp(1.0, -l);
    }
    EXPECT_LE(kraft, 1.0);
    std::vector<std::byte> buffer(64);
    for (std::size_t s = 0; s < p.size(); ++s) {
      BitWriter writer(buffer);
      ASSERT_TRUE(code.put(writer, s));
      const std::size_t bytes = writer.finish();
      BitReader reader(std::span<const std::byte>(buffer).first(bytes), "test");
      EXPECT_EQ(code.get(reader), s);
    }
  }
  EXPECT_THROW(PrefixCode::from_probabilities(p, 5), InvalidArgument);  // 40 symbols > 2^5
}

TEST(PrefixCodeTest, SavedLengthsRebuildTheSameCodeAndBadOnesAreRefused) {
  const std::vector<double> p{0.6, 0.2, 0.1, 0.05, 0.05};
  const auto code = PrefixCode::from_probabilities(p, 24);
  EXPECT_EQ(PrefixCode::from_lengths(code.lengths()).lengths(), code.lengths());
  EXPECT_THROW(PrefixCode::from_lengths({1, 1, 1}), InvalidArgument);
  EXPECT_THROW(PrefixCode::from_lengths({0, 1}), InvalidArgument);
}

TEST(EliasOmegaTest, RoundTripsWithItsClosedFormLength) {
  std::vector<std::uint32_t> values;
  for (std::uint32_t n = 1; n < 3000; ++n) values.push_back(n);
  values.push_back(0xFFFFFFFFU);
  std::vector<std::byte> buffer(values.size() * 8);
  BitWriter writer(buffer);
  std::uint64_t expected_bits = 0;
  for (std::uint32_t n : values) {
    ASSERT_TRUE(put_elias_omega(writer, n));
    expected_bits += static_cast<std::uint64_t>(elias_omega_length(n));
  }
  EXPECT_EQ(writer.bits(), expected_bits);
  const std::size_t bytes = writer.finish();
  BitReader reader(std::span<const std::byte>(buffer).first(bytes), "test");
  for (std::uint32_t n : values) ASSERT_EQ(get_elias_omega(reader), n);
  // Elias 1975: 1 → "0", 2 → "100", 4 → "101000", 16 → "10100100000".
  EXPECT_EQ(elias_omega_length(1), 1);
  EXPECT_EQ(elias_omega_length(2), 3);
  EXPECT_EQ(elias_omega_length(4), 6);
  EXPECT_EQ(elias_omega_length(16), 11);
}

TEST(BitStreamTest, WriterRefusesOverflowAndReaderFailsOnTruncation) {
  std::vector<std::byte> buffer(2);
  BitWriter writer(buffer);
  EXPECT_TRUE(writer.put(0xABC, 12));
  EXPECT_FALSE(writer.put(0x3F, 6));  // 18 bits do not fit in 2 bytes
  EXPECT_TRUE(writer.put(0xF, 4));
  EXPECT_EQ(writer.finish(), 2u);
  EXPECT_EQ(static_cast<int>(buffer[0]), 0xAB);
  EXPECT_EQ(static_cast<int>(buffer[1]), 0xCF);
  BitReader reader(buffer, "test");
  EXPECT_EQ(reader.get(16), 0xABCFu);
  EXPECT_THROW(reader.get(1), CommError);
}

}  // namespace
}  // namespace qccl::test
