// allreduce_mean_sparse: data that is zero outside a support (the rows of an
// embedding table a batch touched) gives allreduce_mean's result bit for bit,
// whatever the codec; Global-QSGD's sparse path reads only the support and
// stays unbiased and needs one round besides the call check; bad supports
// are refused.
#include <gtest/gtest.h>

#include <bit>
#include <set>
#include <string>

#include "../support/patterns.h"
#include "../support/counting_transport.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

constexpr std::size_t kRow = 16;

// Rank r touches a few rows of a table of `rows` rows of 16 (some rows on
// several ranks, different ones per step); the rest is zero.
struct SparseRows {
  std::vector<float> data;
  std::vector<Range> support;
};

SparseRows sparse_rows(int rank, std::size_t rows, std::uint64_t step) {
  std::set<std::size_t> touched;
  for (std::size_t k = 0; k < 5 + static_cast<std::size_t>(rank); ++k) {
    touched.insert((k * 131 + static_cast<std::size_t>(rank) * 7 + step * 17) % rows);
  }
  touched.insert(rows - 1);  // every rank: the last row, up to the data's end
  SparseRows out{std::vector<float>(rows * kRow, 0.0f), {}};
  for (const std::size_t row : touched) {
    for (std::size_t j = 0; j < kRow; ++j) {
      out.data[row * kRow + j] = noise(rank, row * kRow + j + step);
    }
    if (!out.support.empty() && out.support.back().end() == row * kRow) {
      out.support.back().count += kRow;  // adjacent rows: one range
    } else {
      out.support.push_back({row * kRow, kRow});
    }
  }
  return out;
}

struct SparseSupportCase {
  int ranks;
  const char* spec;
};

void PrintTo(const SparseSupportCase& c, std::ostream* out) { *out << c.ranks << " " << c.spec; }

class SparseSupportTest : public ::testing::TestWithParam<SparseSupportCase> {};

// Three steps of a table of 631 rows (10 096 elements): the hinted and the
// plain allreduce agree to the bit on every rank, and ranks agree.
TEST_P(SparseSupportTest, EqualsTheDenseAllreduceBitForBit) {
  const auto [ranks, spec] = GetParam();
  run_world(ranks, [spec = spec](Communicator& comm) {
    auto plain = make_codec(spec, {.seed = 5, .bucket = 2});
    auto hinted = make_codec(spec, {.seed = 5, .bucket = 2});
    for (std::uint64_t step = 0; step < 3; ++step) {
      auto input = sparse_rows(comm.rank(), 631, step);
      auto dense = input.data;
      plain->allreduce_mean(comm, dense);
      hinted->allreduce_mean_sparse(comm, input.data, input.support);
      EXPECT_EQ(input.data, dense) << spec << " step " << step;
      expect_identical_across_ranks(comm, input.data);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, SparseSupportTest,
    ::testing::Values(SparseSupportCase{1, "global-qsgd:sparse=auto"},
                      SparseSupportCase{2, "global-qsgd:sparse=auto"},
                      SparseSupportCase{3, "global-qsgd:sparse=auto"},
                      SparseSupportCase{4, "global-qsgd:sparse=auto"},
                      SparseSupportCase{7, "global-qsgd:sparse=auto"},
                      SparseSupportCase{3, "global-qsgd:dither=exp,sparse=auto"},
                      SparseSupportCase{4, "global-qsgd:bits=4,sparse=auto"},
                      SparseSupportCase{7, "global-qsgd:dither=exp,sparse=auto"},
                      SparseSupportCase{3, "global-qsgd:norm=2,sparse=auto"},
                      SparseSupportCase{3, "global-qsgd"}, SparseSupportCase{3, "fp32"},
                      SparseSupportCase{4, "intsgd"}));

// The sparse path's mean over many steps converges to the exact mean at
// the rate its own spread allows (5σ per element): unbiased, exponential
// dithering included (whose sums are exact in double, not C_nat-rounded).
TEST(SparseSupport, GlobalQsgdSparsePathIsUnbiased) {
  for (const char* spec : {"global-qsgd:sparse=auto", "global-qsgd:dither=exp,sparse=auto",
                           "global-qsgd:bits=4,sparse=auto"}) {
    constexpr int kRanks = 3, kRounds = 1500;
    constexpr std::size_t kRows = 40;
    std::vector<double> exact(kRows * kRow, 0.0);
    for (int r = 0; r < kRanks; ++r) {
      const auto x = sparse_rows(r, kRows, 0).data;
      for (std::size_t i = 0; i < x.size(); ++i) exact[i] += x[i] / kRanks;
    }
    std::vector<std::vector<float>> results;
    run_world(kRanks, [&](Communicator& comm) {
      auto codec = make_codec(spec, {.seed = 77, .bucket = 1});
      const auto input = sparse_rows(comm.rank(), kRows, 0);
      for (int round = 0; round < kRounds; ++round) {
        auto data = input.data;
        codec->allreduce_mean_sparse(comm, data, input.support);
        if (comm.rank() == 0) results.push_back(std::move(data));
      }
    });
    expect_unbiased(spec, results, exact);
  }
}

// The step's exchange carries every rank's support size, a bound on its
// non-zeros: the entries then go in one direct round, each message's size
// giving its count. Without a support the counts take a round of their
// own. Each round is one message from every rank to every other.
TEST(SparseSupport, GlobalQsgdGathersTheEntriesInOneRoundAfterTheCallCheck) {
  for (const int ranks : {1, 2, 3, 4, 7}) {
    run_in_process(ranks, [ranks](Transport& inner) {
      CountingTransport counting(inner);
      Communicator comm(counting, {kTestTimeout, true});
      auto codec = make_codec("global-qsgd:sparse=auto", {.seed = 3});
      auto input = sparse_rows(comm.rank(), 631, 0);
      auto dense = input.data;
      codec->allreduce_mean_sparse(comm, input.data, input.support);
      const int with_support = counting.sent_messages();
      codec->allreduce_mean(comm, dense);
      const int without = counting.sent_messages() - with_support;
      EXPECT_EQ(with_support, 2 * (ranks - 1)) << ranks << " ranks: the call check and the entries";
      EXPECT_EQ(without, 3 * (ranks - 1)) << ranks << " ranks: the call check, counts, entries";
      EXPECT_EQ(counting.exchanges(), 0);
    });
  }
}

// A rank without a support has no bound to share: every rank then takes the
// round of counts, and the result is still the dense one on every rank.
TEST(SparseSupport, RanksWithAndWithoutASupportAgree) {
  for (const int ranks : {2, 3, 4, 7}) {
    run_world(ranks, [](Communicator& comm) {
      auto plain = make_codec("global-qsgd:sparse=auto", {.seed = 4});
      auto mixed = make_codec("global-qsgd:sparse=auto", {.seed = 4});
      auto input = sparse_rows(comm.rank(), 631, 1);
      auto dense = input.data;
      plain->allreduce_mean(comm, dense);
      if (comm.rank() == 1) {
        mixed->allreduce_mean(comm, input.data);
      } else {
        mixed->allreduce_mean_sparse(comm, input.data, input.support);
      }
      EXPECT_EQ(input.data, dense);
      expect_identical_across_ranks(comm, input.data);
    });
  }
}

// zero_stays_zero is a promise the data-parallel engine builds on: it
// hands an embedding's means on as the rows some rank touched. Every codec
// (with its defaults) that makes it keeps rows no rank touched exactly +0
// over three steps; ranks {1,2,3,4,7}. Codecs whose state adds to the input
// (residuals, shifts, factors) must not make it.
TEST(SparseSupport, CodecsKeepingZerosLeaveUntouchedRowsZero) {
  std::vector<std::string> keeping;
  for (const auto& [name, description] : codec_catalog()) {
    std::unique_ptr<Codec> codec;
    try {
      codec = make_codec(name);
    } catch (const InvalidArgument&) {
      continue;  // a wrapper: its inner spec is required
    }
    if (codec->traits().zero_stays_zero) keeping.push_back(name);
  }
  for (const char* spec : {"global-qsgd:dither=exp", "global-qsgd:bits=4,sparse=auto", "fp16",
                           "global-qsgd:norm=2,sparse=auto"}) {
    keeping.push_back(spec);
  }
  EXPECT_GE(keeping.size(), 7u);
  for (const char* spec : {"ef(global-qsgd)", "topk:ratio=0.1", "powersgd", "intsgd"}) {
    EXPECT_FALSE(make_codec(spec)->traits().zero_stays_zero) << spec;
  }
  for (const int ranks : {1, 2, 3, 4, 7}) {
    run_world(ranks, [&](Communicator& comm) {
      for (const auto& spec : keeping) {
        auto codec = make_codec(spec, {.seed = 9, .bucket = 1});
        for (std::uint64_t step = 0; step < 3; ++step) {
          auto input = sparse_rows(comm.rank(), 97, step);
          // The union over ranks of the rows touched, from every rank's input.
          std::vector<char> touched(97, 0);
          for (int r = 0; r < comm.size(); ++r) {
            const auto other = sparse_rows(r, 97, step);
            for (const Range& range : other.support) {
              for (std::size_t i = range.first; i < range.end(); ++i) touched[i / kRow] = 1;
            }
          }
          codec->allreduce_mean_sparse(comm, input.data, input.support);
          for (std::size_t i = 0; i < input.data.size(); ++i) {
            if (touched[i / kRow]) continue;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(input.data[i]), 0u)
                << spec << ", " << comm.size() << " ranks, step " << step << ", element " << i;
          }
        }
      }
    });
  }
}

TEST(SparseSupport, RefusesRangesOutOfOrderOverlappingOrBeyondTheData) {
  run_world(1, [](Communicator& comm) {
    auto codec = make_codec("global-qsgd:sparse=auto", {});
    std::vector<float> data(100, 0.0f);
    const std::vector<std::vector<Range>> bad{
        {{10, 5}, {0, 5}}, {{0, 10}, {5, 10}}, {{90, 11}}, {{101, 0}}};
    for (const auto& support : bad) {
      EXPECT_THROW(codec->allreduce_mean_sparse(comm, data, support), InvalidArgument);
    }
    EXPECT_EQ(codec->step(), 0u);  // refused before the step began
    const std::vector<Range> good{{0, 0}, {0, 5}, {5, 95}};
    codec->allreduce_mean_sparse(comm, data, good);
    EXPECT_EQ(codec->step(), 1u);
  });
}

}  // namespace
}  // namespace qccl::test
