// Every codec on finite inputs near fp32's largest value (FLT_MAX ≈ 3.4e38),
// of mixed signs, on 2 to 7 ranks: the mean of such inputs is itself within
// fp32's range, so each operation must give finite values within the codec's
// error bound of the exact mean (computed in double) — never Inf or NaN from
// a sum or a norm that overflowed on the way, never an overflowed norm
// reported as a corrupt message. fp16, whose range ends at 65504, refuses
// such input by name on every rank before anything moves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

// Every row of the registry, with the parameters that change its
// arithmetic (wire widths, norms, dithering, clipping, error feedback).
const std::vector<std::string> kCodecs{
    "fp32", "fp16", "global-qsgd", "global-qsgd:bits=4", "global-qsgd:dither=exp",
    "global-qsgd:norm=2", "global-qsgd:bits=4,norm=2", "global-qsgd:dither=exp,norm=2",
    "global-qsgd:sparse=auto", "global-qsgd:dither=exp,sparse=auto",
    "qsgd", "qsgd:bits=4,bucket=128", "qsgd:norm=inf", "intsgd",
    "intsgd:round=deterministic,wire=int32", "intsgd:wire=int64", "intsgd-heuristic",
    "intsgd-heuristic:wire=int32", "intdiana", "intdiana:wire=int32", "ef(global-qsgd:bits=4)",
    "ef(fp32)", "ef(fp16)", "terngrad", "terngrad:wire=2bit", "terngrad:clip=2.5", "natural",
    "topk:ef=off",
    "topk", "randk", "randk:ef=off", "randk:scale=unbiased,ef=off", "dgc",
    "dgc:ratio=0.05,momentum=0.8,clip=1,warmup=3,sample=0.1", "signsgd", "signum",
    "scaled-sign", "ef-signsgd", "onebit-quantizer", "onebit", "qgenx",
    "qgenx:bits=4,levels=qada,coding=huffman,norm=2,bucket=100",
    "qgenx:bits=3,levels=exp,coding=elias,norm=1,bucket=333",
    "qgenx:bits=5,levels=qada,coding=huffman,norm=inf,bucket=0", "minmax",
    "minmax:bits=4,bucket=100,rounding=shift", "minmax:bits=3,bucket=0,rounding=dither",
    "minmax:bits=5,bucket=64,levels=learned,refit=1"};

// Finite values of magnitude up to `largest`: element 0 is +largest on
// every rank (its fp32 sum overflows from two ranks on, for the larger
// magnitude below), element 1 −largest, element 2 alternates in sign across
// ranks (the sum cancels), element 3 is largest on rank 0 and tiny
// elsewhere; the rest are noise in (−1, 1)·largest, of either sign.
template <int kPermille>
float extreme(int rank, std::size_t i) {
  constexpr float largest = kPermille / 1000.0f * FLT_MAX;
  switch (i) {
    case 0: return largest;
    case 1: return -largest;
    case 2: return rank % 2 == 0 ? largest : -largest;
    case 3: return rank == 0 ? largest : 1e-30f;
    default: return noise(rank, i) * largest;
  }
}

// 0.9·FLT_MAX, and 0.45·FLT_MAX: below 2^127, the largest magnitude natural
// compression can round up to a power of two.
struct Magnitude {
  float largest;
  InputValue value;
};
const Magnitude kMagnitudes[] = {{0.9f * FLT_MAX, extreme<900>}, {0.45f * FLT_MAX, extreme<450>}};

// Besides giving the mean, a codec may refuse such input with an
// InvalidArgument raised on every rank before anything moves, whose message
// names the cause: `must` when its arithmetic cannot hold these values at
// all; a codec that keeps sums over steps in fp32 (error feedback's
// residuals, DGC's accumulated gradients) may find its sum of this input
// and an earlier residual beyond fp32's range on the second step.
struct Refusal {
  std::string cause;  // empty: no refusal allowed
  bool must = false;
};

Refusal allowed_refusal(const std::string& spec, float largest) {
  const std::string canonical = make_codec(spec)->spec();
  const auto starts = [&](std::string_view prefix) { return canonical.rfind(prefix, 0) == 0; };
  if (spec == "fp16" || spec == "ef(fp16)") return {"exceeds fp16's largest value", true};
  if (spec == "natural" && largest > 0x1p127f) return {"exceeds 2^127", true};
  if (canonical.find("scale=unbiased") != std::string::npos) {
    return {"exceeds fp32's largest value", true};  // x times d/k
  }
  if (starts("ef(") || canonical.find(",ef=on") != std::string::npos || spec == "ef-signsgd" ||
      spec == "onebit" || starts("dgc:")) {
    return {"overflows fp32", false};
  }
  return {};
}

using Param = std::tuple<std::string, CodecOperation, int>;  // codec, operation, ranks
class ExtremeInputTest : public ::testing::TestWithParam<Param> {};

TEST_P(ExtremeInputTest, MeanOfValuesNearTheFp32MaximumIsFiniteAndWithinTheBound) {
  const auto& [spec, operation, ranks] = GetParam();
  for (const Magnitude& magnitude : kMagnitudes) {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
      SCOPED_TRACE("largest input " + std::to_string(magnitude.largest) + ", " +
                   std::string(to_string(algorithm)));
      const Refusal refusal = allowed_refusal(spec, magnitude.largest);
      std::atomic<int> refused{0};
      std::string message;
      run_world(ranks, [&](Communicator& comm) {
        try {
          check_codec_operation(comm, spec, operation, 1000, algorithm, magnitude.value);
        } catch (const InvalidArgument& e) {
          ++refused;
          if (comm.rank() == 0) message = e.what();
        }
      });
      if (refused == 0) {
        EXPECT_FALSE(refusal.must && make_codec(spec)->supports(operation))
            << spec << " took input it cannot hold";
        continue;
      }
      EXPECT_EQ(refused.load(), ranks) << "not every rank refused: " << message;
      EXPECT_FALSE(refusal.cause.empty()) << spec << " refused: " << message;
      if (!refusal.cause.empty()) {
        EXPECT_THAT(message, ::testing::HasSubstr(refusal.cause));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, ExtremeInputTest,
    ::testing::Combine(::testing::ValuesIn(kCodecs),
                       ::testing::Values(CodecOperation::allreduce_mean,
                                         CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather),
                       ::testing::Values(2, 3, 4, 7)),
    [](const ::testing::TestParamInfo<Param>& info) {
      return test_name(std::get<0>(info.param) + "_" +
                       std::string(to_string(std::get<1>(info.param))) + "_n" +
                       std::to_string(std::get<2>(info.param)));
    });

// PowerSGD compresses matrices only: a 40×25 weight (its factors summed by
// fp32 allreduce) and a bias, sent uncompressed. Two steps; with error
// feedback the second compresses g + e, which may overflow (and is then
// refused by name on every rank).
TEST(ExtremeInputPowerSgdTest, MeanOfValuesNearTheFp32MaximumIsFinite) {
  const std::vector<std::string> names{"w", "b"};
  const std::vector<std::vector<std::int64_t>> shapes{{40, 25}, {7}};
  for (int ranks : {2, 3, 7}) {
    for (const std::string spec : {"powersgd:min_rate=0", "powersgd:min_rate=0,ef=off,rank=4"}) {
      std::atomic<int> refused{0};
      run_world(ranks, [&](Communicator& comm) {
        auto codec = make_codec(spec, {.seed = 3});
        codec->set_layout(TensorLayout::of_shapes(names, shapes));
        for (int step = 0; step < 2; ++step) {
          auto data =
              make_vector(1007, [&](std::size_t i) { return extreme<900>(comm.rank(), i); });
          std::vector<float> own(data.size());
          try {
            codec->allreduce_mean(comm, data, {}, own);
          } catch (const NonFiniteError& e) {
            ++refused;
            EXPECT_THAT(e.what(), ::testing::HasSubstr("overflows fp32"));
            return;
          }
          expect_identical_across_ranks(comm, data);
          for (std::size_t i = 0; i < data.size(); ++i) {
            ASSERT_TRUE(std::isfinite(data[i])) << spec << " element " << i << ": " << data[i];
            ASSERT_TRUE(std::isfinite(own[i])) << spec << " own element " << i << ": " << own[i];
          }
          // The bias is sent uncompressed: its mean is exact to fp32 rounding.
          for (std::size_t i = 1000; i < data.size(); ++i) {
            double mean = 0;
            for (int q = 0; q < ranks; ++q) mean += extreme<900>(q, i) / static_cast<double>(ranks);
            EXPECT_NEAR(data[i], mean, ranks * std::ldexp(0.9 * FLT_MAX, -23))
                << spec << " bias " << i;
          }
        }
      });
      EXPECT_TRUE(refused == 0 || (refused == ranks && spec.find("ef=off") == std::string::npos))
          << spec << ": " << refused << " of " << ranks << " ranks refused";
    }
  }
}

}  // namespace
}  // namespace qccl::test
