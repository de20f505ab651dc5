// The element forms of the codecs' encodings (collectives/element_form.h),
// run through the host reference (element_form_reference.h), against the
// encodings' own encode, reduce and decode, byte for byte: what a device
// backend needs from a codec step to give that step's bytes. Over every
// codec with a device step (Global-QSGD's three reductions, fp16, fp32,
// IntSGD's exact first step and its integers with one scale per tensor),
// ranks {1, 2, 3, 4, 7}, ring and halving-doubling, a chunk at an odd offset
// of awkward length. A form's decode completes the step: for fp32's plain
// sum, the encoding's decode followed by the division by n.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <string>
#include <vector>

#include "../support/device_step_codecs.h"
#include "../support/patterns.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/element_form_reference.h"
#include "qccl/codecs/fp32_mean.h"
#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct FormCase {
  std::string spec;
  int ranks;
  Algorithm algorithm;
  bool fed = false;  // intsgd: an observed update, so the step is an integer one
};

std::string name_of(const testing::TestParamInfo<FormCase>& info) {
  std::string name = info.param.spec + (info.param.fed ? "_fed_" : "_") +
                     std::to_string(info.param.ranks) + "ranks_" +
                     (info.param.algorithm == Algorithm::ring ? "ring" : "hd");
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::vector<FormCase> all_cases() {
  std::vector<FormCase> cases;
  for (const std::string& spec : test::device_step_specs()) {
    if (test::is_gathered(spec)) continue;  // GatheredFormTest
    for (bool fed : {false, true}) {
      if (fed && !test::adapts_to_the_optimizer(spec)) continue;
      for (int ranks : {1, 2, 3, 4, 7}) {
        for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
          cases.push_back({spec, ranks, algorithm, fed});
        }
      }
    }
  }
  return cases;
}

class ElementFormTest : public testing::TestWithParam<FormCase> {
 protected:
  static constexpr std::size_t kLength = 3001, kFirst = 38, kCount = 1001;

  // Rank r's input, values of mixed sign and magnitude.
  static std::vector<float> input(int rank) {
    return test::make_vector(kLength, [rank](std::size_t i) {
      return test::noise(rank, i) * std::ldexp(1.0f, static_cast<int>(i % 13) - 6);
    });
  }

  // The step's encoding on `rank`, and its element form.
  std::unique_ptr<Encoding> encoding(int rank, const std::vector<float>& x) {
    const FormCase& c = GetParam();
    codecs_.push_back(make_codec(c.spec, CodecSettings{.seed = 17, .bucket = 4}));
    Codec& codec = *codecs_.back();
    if (c.fed) test::feed(codec, kLength);
    codec.set_step(9);
    double norm = 0;
    for (int r = 0; r < c.ranks; ++r) {
      const auto xr = input(r);
      const double local = local_norm(xr, codec.norm_kind());
      norm = codec.norm_kind() == NormKind::inf ? std::max(norm, local) : std::hypot(norm, local);
    }
    norm_ = norm;
    return codec.encoding_for(norm, c.ranks, rank, c.algorithm, x);
  }

  std::vector<std::unique_ptr<Codec>> codecs_;
  double norm_ = 0;
};


void expect_same_floats(std::span<const float> a, std::span<const float> b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(test::same_bits(a[i], b[i])) << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

TEST_P(ElementFormTest, TheFormGivesTheEncodingsBytes) {
  const FormCase& c = GetParam();
  const auto x0 = input(0), x1 = input(1);
  auto enc0 = encoding(0, x0);
  auto enc1 = encoding(std::min(1, c.ranks - 1), x1);
  ASSERT_NE(enc0, nullptr);
  const auto form = enc0->element_form();
  ASSERT_TRUE(form.has_value()) << enc0->name() << " offers no element form";
  const auto form1 = enc1->element_form();
  ASSERT_TRUE(form1.has_value());

  // Encode: each rank's own chunk.
  std::vector<std::byte> own0(enc0->max_encoded_bytes(kCount)), mine0(own0.size());
  std::vector<std::byte> own1(enc1->max_encoded_bytes(kCount)), mine1(own1.size());
  const std::size_t bytes0 = enc0->encode(std::span<const float>(x0).subspan(kFirst, kCount), kFirst, own0);
  ASSERT_EQ(encode_by_form(*form, std::span<const float>(x0).subspan(kFirst, kCount), kFirst, mine0), bytes0);
  ASSERT_EQ(std::memcmp(own0.data(), mine0.data(), bytes0), 0) << "encode differs";
  const std::size_t bytes1 = enc1->encode(std::span<const float>(x1).subspan(kFirst, kCount), kFirst, own1);
  ASSERT_EQ(encode_by_form(*form1, std::span<const float>(x1).subspan(kFirst, kCount), kFirst, mine1), bytes1);
  ASSERT_EQ(std::memcmp(own1.data(), mine1.data(), bytes1), 0) << "encode of rank 1 differs";

  // One rank's own values, Q(x).
  std::vector<float> values(kCount), reference(kCount);
  enc0->decode_contribution(std::span(own0).first(bytes0), kFirst, values);
  decode_contribution_by_form(*form, std::span(own0).first(bytes0), kFirst, reference);
  expect_same_floats(values, reference, "decode_contribution");

  // One hop of the in-transit reduction on rank 1, then the decoded mean
  // of the two (a complete aggregation where 2 ranks take part).
  if (c.ranks < 2) return;
  Reduction* reduction = enc0->in_transit();
  ASSERT_NE(reduction, nullptr);
  const ReduceContext context{.first = kFirst, .count = kCount, .rank = 1, .hop = 0};
  std::vector<std::byte> accum(own0), accum_by_form(mine0);
  const std::size_t reduced = reduction->reduce(std::span(own1).first(bytes1), accum, bytes0, context);
  ASSERT_TRUE(reduce_by_form(*form, std::span(mine1).first(bytes1), accum_by_form, context));
  ASSERT_EQ(std::memcmp(accum.data(), accum_by_form.data(), reduced), 0) << "reduce differs";
  const bool averaged = form->header_bytes > 0;
  if (averaged && c.ranks != 2) return;  // decode() checks the chunk averages every rank
  enc0->decode(std::span(accum).first(reduced), kFirst, values);
  if (form->code == ElementForm::Code::fp32_summed) finish_fp32_mean(norm_, c.ranks, values);
  decode_by_form(*form, std::span(accum).first(reduced), kFirst, reference);
  expect_same_floats(values, reference, "decode");
}

INSTANTIATE_TEST_SUITE_P(Codecs, ElementFormTest, testing::ValuesIn(all_cases()), name_of);

// A gathered form (min-max's bucket records, minmax_records.h) against
// its encoding: the records of a chunk that starts at an odd element give
// the chunk the encoding sends byte for byte (ranges, packed indices) and
// come back from it unchanged; `ranks` ranks' records decode to what the
// host's gathering decode gives (decode, decode_add in rank order, one
// fp32 division); an allgather's one rank's records to the encoding's
// decode. Every min-max device spec, ranks {1, 2, 3, 4, 7}.
class GatheredFormTest : public testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(GatheredFormTest, RecordsGiveTheEncodingsChunksAndMeans) {
  const auto& [spec, ranks] = GetParam();
  constexpr std::size_t kFirst = 38, kCount = 1001;
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<std::unique_ptr<Encoding>> encodings;
  std::vector<std::vector<std::byte>> chunks, records;
  for (int r = 0; r < ranks; ++r) {
    const auto x = test::make_vector(kFirst + kCount, [r](std::size_t i) {
      return test::noise(r, i) * std::ldexp(1.0f, static_cast<int>(i % 13) - 6) + (i % 300 == 7 ? 5.0f : 0.0f);
    });
    codecs.push_back(make_codec(spec, CodecSettings{.seed = 17, .bucket = 4}));
    codecs.back()->set_step(9);
    encodings.push_back(codecs.back()->encoding_for(1.0, ranks, r, Algorithm::ring, x));
    const auto form = encodings.back()->element_form();
    ASSERT_TRUE(form.has_value()) << spec;
    ASSERT_TRUE(form_is_gathered(*form));
    const auto chunk_of = std::span<const float>(x).subspan(kFirst, kCount);
    chunks.emplace_back(encodings.back()->max_encoded_bytes(kCount));
    chunks.back().resize(encodings.back()->encode(chunk_of, kFirst, chunks.back()));
    records.emplace_back(form_payload_bytes(*form, kCount));
    encode_payload_by_form(*form, chunk_of, kFirst, records.back());
    std::vector<std::byte> sent(chunks.back().size() + 8);
    ASSERT_EQ(gathered_chunk_from_codes(*form, records.back(), kCount, sent), chunks.back().size());
    ASSERT_TRUE(std::equal(chunks.back().begin(), chunks.back().end(), sent.begin())) << "rank " << r;
    std::vector<std::byte> back(records.back().size());
    gathered_codes_from_chunk(*form, spec, chunks.back(), kCount, back);
    ASSERT_EQ(back, records.back()) << "rank " << r;
  }
  ElementForm result = *encodings[0]->element_form();
  result.ranks = ranks;
  result.divide_by = ranks;
  std::vector<std::byte> all;
  for (const auto& r : records) all.insert(all.end(), r.begin(), r.end());
  ASSERT_EQ(all.size(), form_payload_bytes(result, kCount));
  std::vector<float> expected(kCount), scratch(kCount), mean(kCount);
  encodings[0]->decode(chunks[0], kFirst, expected);
  for (int r = 1; r < ranks; ++r) encodings[0]->decode_add(chunks[r], kFirst, expected, scratch);
  for (float& v : expected) v /= static_cast<float>(ranks);
  decode_payload_by_form(result, all, 0, mean);
  expect_same_floats(expected, mean, "the mean");
  result.ranks = 1;
  result.divide_by = 1;
  encodings[0]->decode(chunks[ranks - 1], kFirst, expected);
  decode_payload_by_form(result, records[ranks - 1], 0, mean);
  expect_same_floats(expected, mean, "one rank's values");
}

INSTANTIATE_TEST_SUITE_P(Codecs, GatheredFormTest,
                         testing::Combine(testing::ValuesIn(test::device_gathered_specs()),
                                          testing::Values(1, 2, 3, 4, 7)),
                         [](const testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           std::string name = std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// A received chunk whose range is not finite or not ordered, or whose size
// is wrong, is refused as the encoding's decode refuses it.
TEST(GatheredFormTest, CorruptChunksAreRefused) {
  auto codec = make_codec("minmax:bits=4,bucket=16", CodecSettings{.seed = 1});
  const auto x = test::make_vector(40, [](std::size_t i) { return test::noise(0, i); });
  auto encoding = codec->encoding_for(1.0, 2, 0, Algorithm::ring, x);
  const auto form = *encoding->element_form();
  std::vector<std::byte> chunk(encoding->max_encoded_bytes(40));
  chunk.resize(encoding->encode(x, 0, chunk));
  std::vector<std::byte> records(form_payload_bytes(form, 40));
  std::vector<float> out(40);
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf(""), -10.0f}) {
    auto corrupt = chunk;
    std::memcpy(corrupt.data() + 12, &bad, 4);  // bucket 1's max
    EXPECT_THROW(gathered_codes_from_chunk(form, "minmax", corrupt, 40, records), CommError) << bad;
    EXPECT_THROW(encoding->decode(corrupt, 0, out), CommError) << bad;
  }
  EXPECT_ANY_THROW(gathered_codes_from_chunk(form, "minmax", std::span(chunk).first(chunk.size() - 1), 40, records));
}

// Learned levels are refitted from values on the host: no form.
TEST(GatheredFormTest, LearnedLevelsHaveNoForm) {
  auto codec = make_codec("minmax:levels=learned");
  std::vector<float> x(4, 1.0f);
  EXPECT_FALSE(codec->encoding_for(1.0, 2, 0, Algorithm::ring, x)->element_form().has_value());
  EXPECT_FALSE(codec->traits().device_step);
}

// One range per vector (bucket=0): the form's one bucket is the encoded
// vector, and its records (the vector's range, then every index) hold
// every chunk the encoding sends, wherever the chunk starts: the range
// joined to the chunk's indices is that chunk's one bucket, byte for byte.
TEST(GatheredFormTest, OneRangePerVectorHoldsEveryChunk) {
  for (const char* spec : {"minmax:bucket=0", "minmax:bits=3,bucket=0,rounding=shift",
                           "minmax:bits=4,bucket=0,rounding=dither"}) {
    auto codec = make_codec(spec, CodecSettings{.seed = 3});
    codec->set_step(5);
    const auto x = test::make_vector(1039, [](std::size_t i) {
      return test::noise(1, i) * std::ldexp(1.0f, static_cast<int>(i % 13) - 6);
    });
    auto encoding = codec->encoding_for(1.0, 3, 1, Algorithm::ring, x);
    ASSERT_TRUE(codec->traits().device_step) << spec;
    const auto form = encoding->element_form();
    ASSERT_TRUE(form.has_value()) << spec;
    ASSERT_EQ(form->values_per_range, x.size()) << spec;
    std::vector<std::byte> records(form_payload_bytes(*form, x.size()));
    encode_payload_by_form(*form, x, 0, records);
    for (const auto& [first, count] : {std::pair<std::size_t, std::size_t>{0, 1039}, {38, 1001}, {517, 1}}) {
      std::vector<std::byte> sent(encoding->max_encoded_bytes(count));
      sent.resize(encoding->encode(std::span(x).subspan(first, count), first, sent));
      std::vector<std::byte> joined(8 + count);
      std::copy_n(records.begin(), 8, joined.begin());
      std::copy_n(records.begin() + 8 + static_cast<std::ptrdiff_t>(first), count, joined.begin() + 8);
      ElementForm chunk_form = *form;
      chunk_form.values_per_range = count;
      std::vector<std::byte> built(sent.size() + 8);
      ASSERT_EQ(gathered_chunk_from_codes(chunk_form, joined, count, built), sent.size()) << spec;
      EXPECT_TRUE(std::equal(sent.begin(), sent.end(), built.begin())) << spec << " chunk at " << first;
    }
  }
}

// An in-transit sum beyond n·s (Global-QSGD's levels) or n·c (IntSGD's
// integers) is refused by both: 63 per rank at 2 ranks, so 63 + 64 = 127
// exceeds 126. A finished chunk holding such a sum, which no valid
// aggregation produces, is out of bounds for IntSGD's form as for its
// encoding's decode.
TEST(ElementFormBoundsTest, ASumOutOfBoundsIsRefusedByTheFormToo) {
  for (const char* spec : {"global-qsgd:bits=8", "intsgd-heuristic"}) {
    auto codec = make_codec(spec, CodecSettings{.seed = 1});
    std::vector<float> x(8, 1.0f);
    auto encoding = codec->encoding_for(1.0, 2, 0, Algorithm::ring, x);
    const auto form = encoding->element_form();
    ASSERT_TRUE(form.has_value()) << spec;
    ASSERT_EQ(form->limit, 126) << spec;
    std::vector<std::byte> a(8, std::byte{63}), b(8, std::byte{63});
    const ReduceContext context{.first = 0, .count = 8, .rank = 0, .hop = 0};
    EXPECT_TRUE(reduce_by_form(*form, b, a, context)) << spec;
    EXPECT_TRUE(codes_within_bounds(*form, a)) << spec;
    b[3] = std::byte{64};
    std::vector<std::byte> again(8, std::byte{63});
    EXPECT_FALSE(reduce_by_form(*form, b, again, context)) << spec;
    again.assign(8, std::byte{63});
    EXPECT_THROW(encoding->in_transit()->reduce(b, again, 8, context), CommError) << spec;
  }
  auto codec = make_codec("intsgd-heuristic", CodecSettings{.seed = 1});
  std::vector<float> x(8, 1.0f);
  auto encoding = codec->encoding_for(1.0, 2, 0, Algorithm::ring, x);
  std::vector<std::byte> beyond(8, std::byte{0});
  beyond[2] = static_cast<std::byte>(-127);
  EXPECT_FALSE(codes_within_bounds(*encoding->element_form(), beyond));
  std::vector<float> out(8);
  EXPECT_THROW(encoding->decode(beyond, 0, out), CommError);
}

// The int64 wire's bound n·c is beyond int32 (2^63 − 1024 at 2 ranks):
// sums up to it pass, one more is refused, and so is an addition that
// overflows int64 (which would wrap into range), by the form and by the
// encoding alike; INT64_MIN in a finished chunk is out of bounds.
TEST(ElementFormBoundsTest, TheInt64WiresBoundAndOverflowAreRefusedByTheFormToo) {
  auto codec = make_codec("intsgd-heuristic:wire=int64", CodecSettings{.seed = 1});
  std::vector<float> x(4, 1.0f);
  auto encoding = codec->encoding_for(1.0, 2, 0, Algorithm::ring, x);
  const auto form = encoding->element_form();
  ASSERT_TRUE(form.has_value());
  ASSERT_EQ(form->code, ElementForm::Code::int_i64_summed);
  const std::int64_t clip = (std::int64_t{1} << 62) - 512;  // the largest double-exact c <= (2^63 − 1)/2
  ASSERT_EQ(form->clip, clip);
  ASSERT_EQ(form->limit, 2 * clip);
  const auto bytes = [](std::vector<std::int64_t> v) {
    std::vector<std::byte> out(v.size() * 8);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  const ReduceContext context{.first = 0, .count = 4, .rank = 0, .hop = 0};
  const std::vector<std::int64_t> halves{clip, -clip, 1, 0};
  auto accum = bytes(halves);
  EXPECT_TRUE(reduce_by_form(*form, bytes(halves), accum, context));
  EXPECT_TRUE(codes_within_bounds(*form, accum));
  for (const std::vector<std::int64_t>& too_far :
       {std::vector<std::int64_t>{clip, -clip - 1, 1, 0},                        // n·c + 1
        std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), 0, 0, 0}}) {  // overflows
    const auto incoming = bytes(too_far);
    auto by_form = bytes(halves);
    EXPECT_FALSE(reduce_by_form(*form, incoming, by_form, context));
    auto by_encoding = bytes(halves);
    EXPECT_THROW(encoding->in_transit()->reduce(incoming, by_encoding, by_encoding.size(), context), CommError);
  }
  const auto beyond = bytes({0, std::numeric_limits<std::int64_t>::min(), 0, 0});
  EXPECT_FALSE(codes_within_bounds(*form, beyond));
  std::vector<float> out(4);
  EXPECT_THROW(encoding->decode(beyond, 0, out), CommError);
}

// Norms beyond fp32's range take the encodings' double path: no form.
TEST(ElementFormBoundsTest, NormsBeyondFp32HaveNoForm) {
  for (const char* spec : {"global-qsgd:bits=8", "global-qsgd:dither=exp"}) {
    auto codec = make_codec(spec);
    std::vector<float> x(4, 1.0f);
    auto encoding = codec->encoding_for(1e300, 2, 0, Algorithm::ring, x);
    EXPECT_FALSE(encoding->element_form().has_value()) << spec;
  }
}

}  // namespace
}  // namespace qccl
