#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/codec_spec.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view spec) {
  try {
    make_codec(spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(CodecSpecTest, ParsesNameAndParameters) {
  const auto spec = parse_spec_syntax("global-qsgd: bits=8 , norm=2");
  EXPECT_EQ(spec.name, "global-qsgd");
  ASSERT_EQ(spec.params.size(), 2u);
  EXPECT_EQ(spec.params[0], (std::pair<std::string, std::string>{"bits", "8"}));
  EXPECT_EQ(spec.params[1], (std::pair<std::string, std::string>{"norm", "2"}));
  EXPECT_TRUE(parse_spec_syntax("fp16").params.empty());
}

TEST(CodecSpecTest, ParsesAWrapperAroundAnInnerSpec) {
  const auto spec = parse_spec_syntax("ef(global-qsgd:bits=4,dither=linear)");
  EXPECT_EQ(spec.name, "ef");
  EXPECT_EQ(spec.inner, "global-qsgd:bits=4,dither=linear");
  EXPECT_TRUE(spec.params.empty());
  const auto nested = parse_spec_syntax(" w ( ef(fp16) ) : k=v ");
  EXPECT_EQ(nested.name, "w");
  EXPECT_EQ(nested.inner, "ef(fp16)");
  ASSERT_EQ(nested.params.size(), 1u);
  EXPECT_EQ(nested.params[0], (std::pair<std::string, std::string>{"k", "v"}));
}

TEST(CodecSpecTest, RejectsMalformedSpecs) {
  for (const char* bad : {"", ":bits=8", "global-qsgd:bits", "global-qsgd:=8", "global-qsgd:bits=",
                          "global-qsgd:bits=8,bits=8", "global-qsgd:bits=8,,norm=2", "ef(",
                          "ef()", "ef(fp16", "ef(fp16)x", "ef(fp16)bits=8", "(fp16)"}) {
    EXPECT_THROW(parse_spec_syntax(bad), InvalidArgument) << "'" << bad << "'";
  }
}

// Nesting and length are bounded before parsing, so a spec from a config
// file or Python cannot take quadratic time or exhaust the stack.
TEST(CodecSpecTest, RefusesSpecsNestedOrLongBeyondTheLimitsNamingThem) {
  const auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += "ef(";
    text += "fp32";
    for (int i = 0; i < depth; ++i) text += ")";
    return text;
  };
  EXPECT_NO_THROW(parse_spec_syntax(nested(kMaxSpecNesting)));
  EXPECT_THAT(error_of(nested(kMaxSpecNesting + 1)),
              HasSubstr("nests " + std::to_string(kMaxSpecNesting + 1) + " wrappers; at most " +
                        std::to_string(kMaxSpecNesting)));
  // Deep enough to overflow the stack if it recursed: refused at once.
  EXPECT_THAT(error_of(nested(100000)), HasSubstr("characters is refused"));
  EXPECT_THAT(error_of(std::string(200, '(') + "fp32" + std::string(200, ')')),
              HasSubstr("nests 200 wrappers"));
  std::string long_params = "global-qsgd:bits=8";
  while (long_params.size() <= kMaxSpecLength) long_params += ",bits=8";
  EXPECT_THAT(error_of(long_params), HasSubstr("specs are at most 1024 characters"));
  // The message quotes the start of the text, not all of it.
  EXPECT_LT(error_of(nested(100000)).size(), 300u);
}

TEST(CodecSpecTest, ErrorsListWhatIsValid) {
  EXPECT_THAT(error_of("zstd"), HasSubstr("valid codecs: fp32, fp16, global-qsgd, qsgd"));
  EXPECT_THAT(error_of("global-qsgd:level=3"), HasSubstr("valid: bits, dither, norm, sparse"));
  EXPECT_THAT(error_of("global-qsgd:norm=1"), HasSubstr("valid values: inf, 2"));
  EXPECT_THAT(error_of("global-qsgd:bits=3"), HasSubstr("valid values: 8, 4"));
  EXPECT_THAT(error_of("global-qsgd:bits=4,dither=exp"), HasSubstr("exponential dithering is 8-bit"));
  EXPECT_THAT(error_of("fp16:bits=8"), HasSubstr("valid: none"));
  EXPECT_THAT(error_of("fp16(fp32)"), HasSubstr("fp16 wraps no other codec"));
}

TEST(CodecSpecTest, CanonicalSpecsNameEveryParameter) {
  EXPECT_EQ(make_codec("global-qsgd")->spec(), "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off");
  EXPECT_EQ(make_codec("global-qsgd:norm=2")->spec(), "global-qsgd:bits=8,dither=linear,norm=2,sparse=off");
  EXPECT_EQ(make_codec("fp16")->spec(), "fp16");
  EXPECT_EQ(make_codec("fp32")->wire_bytes(10), 40u);
  EXPECT_EQ(make_codec("fp16")->wire_bytes(10), 20u);
  EXPECT_EQ(make_codec("global-qsgd")->wire_bytes(10), 10u);
  EXPECT_TRUE(make_codec("global-qsgd")->unbiased());
  std::vector<std::string> names;
  for (const auto& [name, description] : codec_catalog()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "fp32", "fp16", "global-qsgd", "qsgd", "qgenx", "minmax", "terngrad", "natural", "intsgd",
                       "intsgd-heuristic", "intdiana", "topk", "randk", "dgc", "signsgd",
                       "signum", "scaled-sign", "ef-signsgd", "onebit-quantizer", "onebit",
                       "powersgd", "ef"}));
  EXPECT_EQ(make_codec("qsgd")->spec(), "qsgd:bits=8,bucket=512,norm=2");
  EXPECT_EQ(make_codec("qsgd")->wire_bytes(1000), 2 * 4 + 1000u);  // 2 bucket norms + levels
  EXPECT_EQ(make_codec("qsgd:bits=4,bucket=128")->wire_bytes(1000), 8 * 4 + 500u);
  EXPECT_THAT(error_of("qsgd:bucket=100"), HasSubstr("valid values: 128, 256, 512"));
}

}  // namespace
}  // namespace qccl
