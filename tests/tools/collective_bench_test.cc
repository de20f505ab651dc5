#include <gtest/gtest.h>

#include <sstream>

#include "../support/world.h"
#include "bench_helpers.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/tools/bench_report.h"
#include "qccl/tools/collective_bench.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

BenchConfig small(BenchOperation op) {
  BenchConfig c;
  c.operation = op;
  c.algorithms = algorithms_for(op);
  c.min_bytes = 1024;
  c.max_bytes = 64 * 1024;
  c.step_factor = 8;
  c.iterations = 3;
  c.warmup = 1;
  c.chunk_bytes = 4096;
  return c;
}


TEST(CollectiveBenchTest, AllreduceRowsAreCorrectAndFollowTheNcclConvention) {
  const auto rows = run_bench(4, small(BenchOperation::allreduce));
  // Sizes 1K, 8K, 64K x ring, halving-doubling, native, hierarchical (each
  // in-process rank its own host: a ring across the 4 hosts).
  ASSERT_EQ(rows.size(), 3u * 4u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.wrong, 0u);
    EXPECT_EQ(r.count * 4, r.bytes);
    EXPECT_GT(r.median_us, 0);
    EXPECT_GE(r.p99_us, r.median_us);
    EXPECT_DOUBLE_EQ(r.algbw_gbps, r.bytes / (r.median_us * 1e3));
    EXPECT_DOUBLE_EQ(r.busbw_gbps, r.algbw_gbps * 2.0 * 3.0 / 4.0);
    if (r.algorithm == Algorithm::native) {
      EXPECT_FALSE(r.sent_bytes_per_rank.has_value());
    } else {
      // Ring, and halving-doubling for a power-of-two rank count, are bandwidth
      // optimal: each rank sends 2(n-1)/n of the vector (hierarchical too,
      // one rank per host).
      ASSERT_TRUE(r.sent_bytes_per_rank.has_value());
      EXPECT_DOUBLE_EQ(*r.sent_bytes_per_rank, 1.5 * static_cast<double>(r.bytes));
    }
  }
}

// Ring and halving-doubling on a power-of-two rank count are bandwidth
// optimal: each rank sends (n-1)/n of the vector; native is MPI's own.
TEST(CollectiveBenchTest, OtherOperationsAreCorrectAndSendTheirShare) {
  for (auto op : {BenchOperation::allgather, BenchOperation::reduce_scatter, BenchOperation::broadcast}) {
    const auto rows = run_bench(4, small(op));
    ASSERT_FALSE(rows.empty());
    for (const auto& r : rows) {
      EXPECT_EQ(r.wrong, 0u) << to_string(op) << " " << to_string(r.algorithm);
      EXPECT_DOUBLE_EQ(r.busbw_gbps, r.algbw_gbps * bus_factor(op, 4));
      if (op == BenchOperation::broadcast) continue;
      if (r.algorithm == Algorithm::native) {
        EXPECT_FALSE(r.sent_bytes_per_rank.has_value());
      } else {
        ASSERT_TRUE(r.sent_bytes_per_rank.has_value());
        EXPECT_DOUBLE_EQ(*r.sent_bytes_per_rank, 0.75 * static_cast<double>(r.bytes))
            << to_string(op) << " " << to_string(r.algorithm);
      }
    }
  }
}

// Reduce-scatter and allgather with codecs, beside MPI fp32: every row
// within the codec's worst-case error of the closed form, on odd rank
// counts too, and the compressed bytes on the wire.
TEST(CollectiveBenchTest, CodecsOnReduceScatterAndAllgather) {
  for (auto op : {BenchOperation::reduce_scatter, BenchOperation::allgather}) {
    for (const char* codec : {"fp16", "global-qsgd", "global-qsgd:bits=4",
                              "global-qsgd:dither=exp", "qsgd"}) {
      auto config = small(op);
      config.codec = codec;
      for (int ranks : {3, 4}) {
        const auto rows = run_bench(ranks, config);
        for (const auto& r : rows) {
          EXPECT_EQ(r.wrong, 0u) << to_string(op) << " " << codec << " on " << ranks << " ranks, "
                                 << to_string(r.algorithm);
        }
        if (ranks != 4) continue;
        // On the ring each rank sends (n−1)/n of the encoded vector — the
        // codec's own wire size — plus at most a chunk header per message.
        const auto wire = make_codec(codec)->wire_bytes(config.max_bytes / sizeof(float));
        const double expected = 0.75 * static_cast<double>(wire);
        const double headers = 8.0 * 3 * (config.max_bytes / config.chunk_bytes + 4);
        for (const auto& r : rows) {
          if (r.algorithm != Algorithm::ring || r.bytes != config.max_bytes) continue;
          EXPECT_GE(*r.sent_bytes_per_rank, 0.99 * expected) << codec;
          EXPECT_LE(*r.sent_bytes_per_rank, expected + headers) << codec;
        }
      }
    }
  }
  auto config = small(BenchOperation::allgather);
  config.codec = "intsgd";
  EXPECT_THROW(validate(config), InvalidArgument);  // the IntSGD family has no allgather
  config = small(BenchOperation::broadcast);
  config.codec = "fp16";
  EXPECT_THROW(validate(config), InvalidArgument);
}

TEST(CollectiveBenchTest, InPlaceAndOddRankCounts) {
  auto config = small(BenchOperation::allreduce);
  config.in_place = true;
  for (int ranks : {1, 3, 7}) {
    for (const auto& r : run_bench(ranks, config)) EXPECT_EQ(r.wrong, 0u) << ranks << " ranks";
  }
  config.operation = BenchOperation::allgather;
  config.algorithms = {Algorithm::ring};
  for (const auto& r : run_bench(3, config)) EXPECT_EQ(r.wrong, 0u);
}

TEST(CollectiveBenchTest, ValidateRejectsBadConfigurations) {
  auto c = small(BenchOperation::broadcast);
  c.algorithms = {Algorithm::halving_doubling};
  EXPECT_THROW(validate(c), InvalidArgument);
  c = small(BenchOperation::allreduce);
  c.min_bytes = 1 << 20;
  c.max_bytes = 1024;
  EXPECT_THROW(validate(c), InvalidArgument);
  c = small(BenchOperation::allreduce);
  c.step_factor = 1;
  EXPECT_THROW(validate(c), InvalidArgument);
  c = small(BenchOperation::reduce_scatter);
  c.in_place = true;
  EXPECT_THROW(validate(c), InvalidArgument);
}

TEST(BenchReportTest, TableAndJsonCarryEveryRow) {
  const auto config = small(BenchOperation::allreduce);
  const auto rows = run_bench(2, config);
  const BenchContext context{config, 2, "in-process transport"};
  std::ostringstream table;
  print_table(table, context, rows);
  EXPECT_NE(table.str().find("Out of bounds values : 0 OK"), std::string::npos);
  EXPECT_NE(table.str().find("vs_native"), std::string::npos);
  const auto json = to_json(context, rows);
  ASSERT_EQ(json["rows"].size(), rows.size());
  EXPECT_EQ(json["rows"][0]["wrong"], 0);
  EXPECT_EQ(json["ranks"], 2);
  EXPECT_TRUE(json["rows"][2]["sent_bytes_per_rank"].is_null());  // native
  EXPECT_DOUBLE_EQ(json["rows"][2]["vs_native"].get<double>(), 1.0);
}

TEST(UnitsTest, ParsesBinarySuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("1K"), 1024u);
  EXPECT_EQ(parse_bytes("64k"), 65536u);
  EXPECT_EQ(parse_bytes("16M"), 16u << 20);
  EXPECT_EQ(parse_bytes("16MiB"), 16u << 20);
  EXPECT_EQ(parse_bytes("1G"), std::size_t{1} << 30);
  EXPECT_EQ(parse_bytes("512B"), 512u);
  for (const char* bad : {"", "M", "12Q", "-1", "1.5M", "3KX", "99999999999999999999G"}) {
    EXPECT_THROW(parse_bytes(bad), InvalidArgument) << bad;
  }
  EXPECT_EQ(format_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(format_bytes(1000), "1000 B");
}

}  // namespace
}  // namespace qccl::tools
