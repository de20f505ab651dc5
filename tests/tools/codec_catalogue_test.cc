// `qccl codecs`: every codec has a recommended setting that parses, and the
// catalogue reports what the codecs themselves say, exact where the size is.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/registry/recommended_settings.h"
#include "qccl/common/errors.h"
#include "qccl/tools/codec_catalogue.h"

namespace qccl::tools {
namespace {

TEST(RecommendedSettings, EveryCodecHasOneThatParsesAndNamesItsSource) {
  std::set<std::string> covered;
  for (const auto& setting : recommended_settings()) {
    SCOPED_TRACE(setting.spec);
    EXPECT_EQ(CodecSpec::parse(setting.spec).name(), setting.codec);
    EXPECT_FALSE(setting.source.empty());
    covered.insert(setting.codec);
  }
  for (const auto& [name, description] : codec_catalog()) {
    EXPECT_TRUE(covered.count(name)) << name << " has no recommended setting";
  }
}

TEST(RecommendedSettings, FollowTheCatalogueOrder) {
  std::vector<std::string> order;
  for (const auto& [name, description] : codec_catalog()) order.push_back(name);
  std::size_t at = 0;
  for (const auto& setting : recommended_settings()) {
    while (at < order.size() && order[at] != setting.codec) ++at;
    ASSERT_LT(at, order.size()) << setting.codec << " is out of the catalogue's order";
  }
}

CatalogueRow only_row(const std::string& spec, CatalogueQuery query = {}) {
  const auto rows = codec_catalogue({spec}, query);
  EXPECT_EQ(rows.size(), 1u);
  return rows.front();
}

// Wire sizes are exact: fp32 and the dense quantizers are fixed-width;
// Top-k sends a 32-bit count and ceil(ratio·d) (index, value) pairs of 64
// bits; PowerSGD at
// rank r sends (rows + cols)·r fp32 factors of a matrix.
TEST(CodecCatalogue, BitsPerElementAreTheCodecsExactSizes) {
  const CatalogueQuery query{.elements = 1u << 20, .ranks = 4};
  EXPECT_DOUBLE_EQ(only_row("fp32", query).bits_per_element, 32);
  EXPECT_DOUBLE_EQ(only_row("fp16", query).bits_per_element, 16);
  EXPECT_DOUBLE_EQ(only_row("global-qsgd:bits=8", query).bits_per_element, 8);
  EXPECT_DOUBLE_EQ(only_row("global-qsgd:bits=4", query).bits_per_element, 4);
  const double pairs = std::ceil(0.01 * (1u << 20));
  EXPECT_DOUBLE_EQ(only_row("topk:ratio=0.01", query).bits_per_element, (32 + pairs * 64) / (1u << 20));
  EXPECT_DOUBLE_EQ(only_row("powersgd:rank=2", query).bits_per_element,
                   (1024.0 + 1024.0) * 2 * 32 / (1u << 20));
}

TEST(CodecCatalogue, TraitsAndBoundsAreTheCodecsOwn) {
  for (const std::string spec : {"global-qsgd:bits=8", "qsgd", "topk", "signsgd", "minmax"}) {
    SCOPED_TRACE(spec);
    const CatalogueQuery query{.elements = 4096, .ranks = 7, .algorithm = Algorithm::halving_doubling};
    const auto row = only_row(spec, query);
    const auto codec = make_codec(spec);
    EXPECT_EQ(row.unbiased, codec->unbiased());
    EXPECT_EQ(row.canonical, codec->spec());
    EXPECT_EQ(row.aggregation == "in transit",
              codec->aggregation() == Aggregation::compressed_domain);
    EXPECT_TRUE(row.source.empty());  // given, not recommended
  }
  // Global-QSGD's bound: less than one of its ⌊127/n⌋ levels per rank.
  const auto linear = only_row("global-qsgd:bits=8", {.elements = 1000, .ranks = 4});
  ASSERT_TRUE(linear.max_abs_error.has_value());
  EXPECT_DOUBLE_EQ(*linear.max_abs_error, 1.0 / (127 / 4));
  // Top-k with error feedback (its default) has no per-element bound: a
  // step may send a residual carried from earlier steps.
  EXPECT_FALSE(only_row("topk").max_abs_error.has_value());
}

TEST(CodecCatalogue, RecommendedRowsCarryTheirSources) {
  const auto rows = codec_catalogue({}, {});
  ASSERT_EQ(rows.size(), recommended_settings().size());
  for (const auto& row : rows) EXPECT_FALSE(row.source.empty()) << row.spec;
}

TEST(CodecCatalogue, BadSpecsAndQueriesAreRefusedByName) {
  EXPECT_THROW(codec_catalogue({"no-such-codec"}, {}), InvalidArgument);
  EXPECT_THROW(codec_catalogue({}, {.ranks = 0}), InvalidArgument);
  EXPECT_THROW(codec_catalogue({}, {.ranks = 1025}), InvalidArgument);
  EXPECT_THROW(codec_catalogue({}, {.elements = 0}), InvalidArgument);
}

TEST(CodecCatalogue, PrintsEveryRowAndTheJsonHoldsNullForNoBound) {
  const CatalogueQuery query{.elements = 1000, .ranks = 2};
  const auto rows = codec_catalogue({"fp32", "topk"}, query);
  std::ostringstream out;
  print_codec_catalogue(out, rows, query);
  EXPECT_NE(out.str().find("one 25x40 matrix (1000 elements) per rank on 2 ranks"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\ntopk "), std::string::npos);
  const auto json = codec_catalogue_json(rows, query);
  ASSERT_EQ(json["codecs"].size(), 2u);
  EXPECT_TRUE(json["codecs"][1]["max_abs_error"].is_null());
  EXPECT_EQ(json["codecs"][0]["bits_per_element"], 32.0);
}

}  // namespace
}  // namespace qccl::tools
