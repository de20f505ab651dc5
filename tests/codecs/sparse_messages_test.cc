// Global-QSGD's sparse messages: a rank sends the smaller of its non-zero
// entries and its support's runs; both expand to the same entries (zero
// codes dropped), which is what makes the result independent of the form;
// a damaged message is a CommError naming the rank, never a read out of
// bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "qccl/codecs/sparse_messages.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// Two rows of 4 (elements 8..11 and 20..23), a zero code in each.
struct TwoRows {
  std::vector<Range> runs{{8, 4}, {20, 4}};
  std::vector<std::byte> run_codes = bytes({1, 0, 255, 7, 3, 3, 0, 128});
  std::vector<std::uint32_t> index{8, 10, 11, 20, 21, 23};
  std::vector<std::byte> codes = bytes({1, 255, 7, 3, 3, 128});
};

TEST(SparseMessages, TheSmallerFormIsSentAndBothExpandToTheSameEntries) {
  const TwoRows rows;
  std::vector<std::byte> as_runs, as_entries;
  pack_sparse_message(rows.index, rows.codes, rows.runs, rows.run_codes, as_runs);
  pack_sparse_message(rows.index, rows.codes, {}, {}, as_entries);
  EXPECT_EQ(as_runs.size(), 4u + 8 * 2 + 8);      // 28 bytes: runs
  EXPECT_EQ(as_entries.size(), 4u + 5 * 6);       // 34 bytes: entries
  std::vector<std::byte> from_runs, from_entries;
  const std::vector<std::size_t> runs_size{as_runs.size()}, entries_size{as_entries.size()};
  EXPECT_EQ(expand_sparse_messages(as_runs, runs_size, 24, "test", from_runs),
            std::vector<std::size_t>{6});
  EXPECT_EQ(expand_sparse_messages(as_entries, entries_size, 24, "test", from_entries),
            std::vector<std::size_t>{6});
  EXPECT_EQ(from_runs, from_entries);
  // Scattered non-zeros in long runs: the entries are smaller and sent.
  std::vector<std::byte> scattered;
  const std::vector<Range> long_run{{0, 100}};
  const std::vector<std::byte> mostly_zero(100, std::byte{0});
  const std::vector<std::uint32_t> one{5};
  const auto one_code = bytes({9});
  pack_sparse_message(one, one_code, long_run, mostly_zero, scattered);
  EXPECT_EQ(scattered.size(), 4u + 5);
  EXPECT_LE(as_runs.size(), sparse_message_capacity(8));
}

TEST(SparseMessages, SeveralRanksExpandInRankOrder) {
  const TwoRows rows;
  std::vector<std::byte> a, b;
  pack_sparse_message(rows.index, rows.codes, rows.runs, rows.run_codes, a);
  pack_sparse_message(rows.index, rows.codes, {}, {}, b);
  std::vector<std::byte> all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::vector<std::byte> entries;
  const std::vector<std::size_t> sizes{a.size(), b.size()};
  EXPECT_EQ(expand_sparse_messages(all, sizes, 24, "test", entries), (std::vector<std::size_t>{6, 6}));
  EXPECT_EQ(entries.size(), 2u * 30);
  EXPECT_TRUE(std::equal(entries.begin(), entries.begin() + 30, entries.begin() + 30));
}

TEST(SparseMessages, DamagedMessagesNameTheRank) {
  const TwoRows rows;
  std::vector<std::byte> good;
  pack_sparse_message(rows.index, rows.codes, rows.runs, rows.run_codes, good);
  std::vector<std::byte> entries;
  const auto expect_corrupt = [&](std::vector<std::byte> message, std::size_t length) {
    const std::vector<std::size_t> sizes{message.size()};
    try {
      expand_sparse_messages(message, sizes, length, "global-qsgd", entries);
      FAIL() << "a damaged message of " << message.size() << " bytes was read";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
  };
  expect_corrupt(bytes({1, 0}), 24);                                      // shorter than its header
  expect_corrupt(std::vector<std::byte>(good.begin(), good.end() - 1), 24);  // a code missing
  auto longer = good;
  longer.push_back(std::byte{1});
  expect_corrupt(longer, 24);                                             // a byte too many
  expect_corrupt(good, 23);                                               // a run beyond the data
  auto many_runs = good;
  const std::uint32_t huge = 1000;
  std::memcpy(many_runs.data(), &huge, 4);
  expect_corrupt(many_runs, 24);                                          // runs it does not hold
  std::vector<std::byte> entries_message;
  pack_sparse_message(rows.index, rows.codes, {}, {}, entries_message);
  entries_message.pop_back();
  expect_corrupt(entries_message, 24);                                    // not whole entries
}

}  // namespace
}  // namespace qccl
