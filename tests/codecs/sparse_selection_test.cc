// The sparsifiers' shared pieces: the kept counts, the exact k largest
// against a brute-force sort (ties, zeros, every k), Floyd's uniform draw
// (distinct, sorted, uniform over positions and pairs at 5σ), the exact
// bounded integer, and the (index, value) pairs' encoding with every kind
// of corrupt chunk refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "qccl/codecs/sparsifiers/sparse_pairs.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// The k largest |x|, ties to the lower index, by a stable sort; increasing.
std::vector<std::size_t> brute_force_largest(std::span<const float> x, std::size_t k) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return std::abs(x[a]) > std::abs(x[b]); });
  order.resize(std::min(k, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

TEST(SparseSelectionTest, CountsAreTheCeilingOfRatioTimesSizeAtLeastOne) {
  EXPECT_EQ(sparse_count(0.01, 0), 0u);
  EXPECT_EQ(sparse_count(0.01, 1), 1u);
  EXPECT_EQ(sparse_count(0.01, 99), 1u);
  EXPECT_EQ(sparse_count(0.01, 100), 1u);
  EXPECT_EQ(sparse_count(0.01, 101), 2u);
  EXPECT_EQ(sparse_count(0.01, 100000), 1000u);
  EXPECT_EQ(sparse_count(0.07, 100), 7u);  // 0.07·100 = 7.000000000000001 in binary
  EXPECT_EQ(sparse_count(0.25, 10), 3u);
  EXPECT_EQ(sparse_count(1.0, 12345), 12345u);
  EXPECT_EQ(sparse_count(1e-9, 10), 1u);
}

TEST(SparseSelectionTest, SelectionTensorsAreTheLayoutsWhenItCoversTheData) {
  const std::vector<std::size_t> sizes{3, 0, 5};
  const auto layout = TensorLayout::of_sizes(sizes);
  ASSERT_EQ(selection_tensors(layout, 8).size(), 3u);
  const auto whole = selection_tensors(layout, 6);  // an allgather's shard
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].elements, 6u);
  EXPECT_EQ(selection_tensors(TensorLayout(), 9)[0].elements, 9u);
}

TEST(SparseSelectionTest, LargestAreExactlyTheBruteForceOnesWithTiesToTheLowerIndex) {
  std::mt19937 random(17);
  std::vector<std::uint32_t> scratch;
  for (std::size_t d : {0, 1, 2, 7, 100, 1000}) {
    for (int kind = 0; kind < 3; ++kind) {
      // kind 0: few distinct magnitudes (many ties, ±0 among them); 1:
      // continuous values; 2: all equal magnitudes of both signs.
      std::vector<float> x(d);
      for (float& v : x) {
        const int pick = static_cast<int>(random() % 7) - 3;
        v = kind == 0   ? (pick == 0 ? (random() % 2 ? 0.0f : -0.0f) : static_cast<float>(pick))
            : kind == 1 ? std::ldexp(static_cast<float>(random() % 100000) - 50000.0f, -10)
                        : (random() % 2 ? 2.5f : -2.5f);
      }
      for (std::size_t k : {std::size_t{0}, std::size_t{1}, d / 3, d / 2, d > 0 ? d - 1 : 0, d,
                            d + 5}) {
        std::vector<std::size_t> selected{42};  // appended after what is there
        select_largest(x, k, 1000, selected, scratch);
        auto expected = brute_force_largest(x, k);
        for (auto& j : expected) j += 1000;
        expected.insert(expected.begin(), 42);
        EXPECT_EQ(selected, expected) << "d " << d << " kind " << kind << " k " << k;
      }
    }
  }
}

TEST(SparseSelectionTest, UniformBelowIsInRangeAndUniformAtFiveSigma) {
  const CounterRng rng(3, 1, 2, 0, RngStream::sparsify);
  for (std::uint64_t draw = 0; draw < 100; ++draw) EXPECT_EQ(uniform_below(rng, draw, 1), 0u);
  constexpr int kDraws = 30000;
  std::vector<int> counts(3, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[uniform_below(rng, static_cast<std::uint64_t>(i), 3)];
  const double sd = std::sqrt(kDraws * (1.0 / 3) * (2.0 / 3));
  for (int c : counts) EXPECT_NEAR(c, kDraws / 3.0, 5 * sd);
  // A bound just above 2^63 rejects almost half of the 64-bit draws: the
  // accepted ones still land below the bound, in both halves equally.
  const std::uint64_t bound = (std::uint64_t{1} << 63) + 1;
  int upper = 0;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t r = uniform_below(rng, static_cast<std::uint64_t>(i), bound);
    ASSERT_LT(r, bound);
    upper += r >= (std::uint64_t{1} << 62) ? 1 : 0;  // [2^62, 2^63]: about half
  }
  EXPECT_NEAR(upper, kDraws / 2.0, 5 * std::sqrt(kDraws / 4.0));
}

TEST(SparseSelectionTest, UniformDrawIsDistinctSortedAndDeterministic) {
  std::vector<std::uint64_t> bitmap;
  for (std::size_t d : {1, 2, 63, 64, 65, 1000}) {
    for (std::size_t k : {std::size_t{0}, std::size_t{1}, d / 2, d - 1, d, d + 3}) {
      const CounterRng rng(9, d, k, 0, RngStream::sparsify);
      std::vector<std::size_t> a, b;
      select_uniform(rng, d, k, 7, a, bitmap);
      select_uniform(rng, d, k, 7, b, bitmap);
      EXPECT_EQ(a, b);
      ASSERT_EQ(a.size(), std::min(k, d));
      EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
      EXPECT_TRUE(std::adjacent_find(a.begin(), a.end()) == a.end()) << "a position twice";
      for (std::size_t j : a) {
        EXPECT_GE(j, 7u);
        EXPECT_LT(j, 7 + d);
      }
    }
  }
}

// Every position with probability k/d, every pair with k(k−1)/(d(d−1)):
// the draw is uniform over k-subsets to second order.
TEST(SparseSelectionTest, UniformDrawKeepsEveryPositionAndPairEquallyOften) {
  constexpr std::size_t kD = 40, kK = 7;
  constexpr int kTrials = 20000;
  std::vector<int> singles(kD, 0), pairs(kD * kD, 0);
  std::vector<std::uint64_t> bitmap;
  std::vector<std::size_t> selected;
  for (int trial = 0; trial < kTrials; ++trial) {
    selected.clear();
    select_uniform(CounterRng(static_cast<std::uint64_t>(trial), 5, 1, 0, RngStream::sparsify), kD,
                   kK, 0, selected, bitmap);
    for (std::size_t a = 0; a < selected.size(); ++a) {
      ++singles[selected[a]];
      for (std::size_t b = a + 1; b < selected.size(); ++b) ++pairs[selected[a] * kD + selected[b]];
    }
  }
  const double p1 = static_cast<double>(kK) / kD;
  const double p2 = p1 * (kK - 1.0) / (kD - 1.0);
  for (std::size_t i = 0; i < kD; ++i) {
    EXPECT_NEAR(singles[i], kTrials * p1, 5 * std::sqrt(kTrials * p1 * (1 - p1))) << i;
    for (std::size_t j = i + 1; j < kD; ++j) {
      EXPECT_NEAR(pairs[i * kD + j], kTrials * p2, 5 * std::sqrt(kTrials * p2 * (1 - p2)))
          << i << ", " << j;
    }
  }
}

// A chunk's bytes: [count][indices − first][values].
std::vector<std::byte> chunk(std::uint32_t count, std::vector<std::uint32_t> indices,
                             std::vector<float> values) {
  std::vector<std::byte> bytes(4 + 4 * indices.size() + 4 * values.size());
  std::memcpy(bytes.data(), &count, 4);
  std::memcpy(bytes.data() + 4, indices.data(), 4 * indices.size());
  std::memcpy(bytes.data() + 4 + 4 * indices.size(), values.data(), 4 * values.size());
  return bytes;
}

TEST(SparsePairsTest, EncodesTheSelectedElementsOfEachChunkAndDecodesThem) {
  SparsePairsEncoding pairs("sparse", {1, 5, 9, 12}, 4);
  EXPECT_EQ(pairs.max_encoded_bytes(2), 4u + 8 * 2);
  EXPECT_EQ(pairs.max_encoded_bytes(100), 4u + 8 * 4);
  const std::vector<float> x{0, 1.5f, 0, 0, -2, 7.25f, 0, 0, 0, -0.5f};  // elements 0..9
  std::vector<std::byte> out(pairs.max_encoded_bytes(10));
  // The chunk [4, 10): elements 5 and 9, at 1 and 5 within it.
  const std::size_t bytes = pairs.encode(std::span(x).subspan(4), 4, out);
  ASSERT_EQ(bytes, 4u + 8 * 2);
  EXPECT_EQ(std::vector<std::byte>(out.begin(), out.begin() + 20), chunk(2, {1, 5}, {7.25f, -0.5f}));
  std::vector<float> decoded(6, 99.0f);
  pairs.decode(std::span(out).first(bytes), 4, decoded);
  EXPECT_EQ(decoded, (std::vector<float>{0, 7.25f, 0, 0, 0, -0.5f}));
  // A chunk with none of them: the count alone.
  EXPECT_EQ(pairs.encode(std::span(x).subspan(6, 3), 6, out), 4u);
  std::vector<float> three(3, 1.0f);
  pairs.decode(std::span(out).first(4), 6, three);
  EXPECT_EQ(three, (std::vector<float>(3, 0.0f)));
  EXPECT_EQ(pairs.in_transit(), nullptr);  // pairs of different ranks are gathered, not summed
}

TEST(SparsePairsTest, CorruptChunksAreRefusedWithCommError) {
  SparsePairsEncoding pairs("sparse", {}, 10);
  std::vector<float> out(10);
  auto decode = [&](const std::vector<std::byte>& bytes) { pairs.decode(bytes, 0, out); };
  EXPECT_NO_THROW(decode(chunk(2, {3, 9}, {1, 2})));
  const auto good = chunk(2, {3, 9}, {1, 2});
  EXPECT_THROW(decode({}), CommError);                                            // no count
  EXPECT_THROW(decode(std::vector<std::byte>(good.begin(), good.begin() + 3)), CommError);
  EXPECT_THROW(decode(std::vector<std::byte>(good.begin(), good.end() - 1)), CommError);  // truncated
  EXPECT_THROW(decode(chunk(3, {3, 9}, {1, 2})), CommError);    // count and size disagree
  EXPECT_THROW(decode(chunk(11, std::vector<std::uint32_t>(11, 0), std::vector<float>(11, 0))),
               CommError);                                      // more pairs than elements
  EXPECT_THROW(decode(chunk(2, {3, 10}, {1, 2})), CommError);   // index out of range
  EXPECT_THROW(decode(chunk(2, {9, 3}, {1, 2})), CommError);    // not increasing
  EXPECT_THROW(decode(chunk(2, {3, 3}, {1, 2})), CommError);    // twice
  try {
    decode(chunk(1, {0xFFFFFFFFU}, {1}));
    ADD_FAILURE() << "an index far out of range was accepted";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("sparse"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qccl
