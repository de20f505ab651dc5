// Every codec through its three operations — allreduce mean, reduce-scatter
// mean, allgather — on ranks {1,2,3,4,7}, sizes {0,1,10,1000,100000}, ring
// and halving-doubling: within the codec's worst-case error of the exact
// result, bitwise identical wherever ranks share a result, a reduce-scatter
// block equal to the allreduce's where both take the same path, and the
// operations a codec lacks refused by name. Unbiasedness of the stochastic
// codecs' reduce-scatter and allgather at 5σ.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <tuple>

#include "../support/codec_checks.h"
#include "../support/patterns.h"
#include "../support/test_names.h"
#include "../support/world.h"
#include "codec_statistics.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

const std::vector<std::string> kCodecs{
    "fp32", "fp16", "global-qsgd", "global-qsgd:bits=4", "global-qsgd:dither=exp",
    "global-qsgd:norm=2", "global-qsgd:sparse=auto", "qsgd", "qsgd:bits=4,bucket=128",
    "intsgd", "intsgd:round=deterministic,wire=int32", "intsgd-heuristic", "intdiana",
    "ef(global-qsgd:bits=4)", "ef(fp16)", "terngrad", "terngrad:wire=2bit", "terngrad:clip=2.5",
    "natural", "topk:ef=off", "topk", "randk", "randk:scale=unbiased,ef=off", "randk:ef=off",
    "dgc", "dgc:ratio=0.05,momentum=0.8,clip=1,warmup=3,sample=0.1", "signsgd", "signum",
    "scaled-sign", "ef-signsgd", "onebit-quantizer", "onebit", "qgenx",
    "qgenx:bits=4,levels=qada,coding=huffman,norm=2,bucket=100",
    "qgenx:bits=3,levels=exp,coding=elias,norm=1,bucket=333",
    "qgenx:bits=5,levels=qada,coding=huffman,norm=inf,bucket=0", "minmax",
    "minmax:bits=4,bucket=100,rounding=shift", "minmax:bits=3,bucket=0,rounding=dither",
    "minmax:bits=5,bucket=64,levels=learned,refit=1"};

using Param = std::tuple<std::string, CodecOperation, int>;  // codec, operation, ranks
class CodecOperationTest : public ::testing::TestWithParam<Param> {};

TEST_P(CodecOperationTest, AgreesWithTheExactResultOnEverySizeAndAlgorithm) {
  const auto& [spec, operation, ranks] = GetParam();
  run_world(ranks, [&](Communicator& comm) {
    for (std::size_t count : {0, 1, 10, 1000, 100000}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        check_codec_operation(comm, spec, operation, count, algorithm);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, CodecOperationTest,
    ::testing::Combine(::testing::ValuesIn(kCodecs),
                       ::testing::Values(CodecOperation::allreduce_mean,
                                         CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather),
                       ::testing::Values(1, 2, 3, 4, 7)),
    [](const ::testing::TestParamInfo<Param>& info) {
      return test_name(std::get<0>(info.param) + "_" +
                       std::string(to_string(std::get<1>(info.param))) + "_n" +
                       std::to_string(std::get<2>(info.param)));
    });

// Algorithm native runs only what MPI can sum. With a layout of several
// tensors, every other codec refuses it by name on every rank before
// anything moves (its reduction, which may slice the step's input by
// tensor, is never built for the question); the others run it.
TEST(CodecNativeTest, OnlyCodecsMpiCanSumRunNative) {
  const std::vector<std::string> names{"w", "b"};
  const std::vector<std::vector<std::int64_t>> shapes{{3, 4}, {5}};
  std::vector<std::string> specs = kCodecs;
  specs.push_back("powersgd:min_rate=0");
  for (const auto& spec : specs) {
    run_world(2, [&](Communicator& comm) {
      auto codec = make_codec(spec);
      codec->set_layout(TensorLayout::of_shapes(names, shapes));
      auto data = make_vector(17, [&](std::size_t i) { return noise(comm.rank(), i); });
      CollectiveOptions options;
      options.algorithm = Algorithm::native;
      if (codec->has_native_equivalent()) {
        codec->allreduce_mean(comm, data, options);
        for (float x : data) EXPECT_TRUE(std::isfinite(x)) << spec;
      } else {
        EXPECT_THROW(codec->allreduce_mean(comm, data, options), InvalidArgument) << spec;
      }
    });
  }
}

// Codecs whose selection, positions or levels follow the tensors: ranks that
// disagree on the tensors fail the call check on every rank, rather than
// combine encodings of different tensors.
TEST(CodecLayoutTest, RanksWithDifferentTensorsFailTheCallCheck) {
  for (const std::string spec : {"topk", "topk:ef=off", "randk", "randk:scale=unbiased,ef=off",
                                 "dgc", "ef-signsgd", "onebit", "scaled-sign", "terngrad",
                                 "powersgd:min_rate=0"}) {
    expect_throw_on_every_rank<MismatchError>(3, [&](Communicator& comm) {
      const std::vector<std::size_t> mine =
          comm.rank() == 0 ? std::vector<std::size_t>{10, 20} : std::vector<std::size_t>{20, 10};
      auto codec = make_codec(spec);
      codec->set_layout(TensorLayout::of_sizes(mine));
      auto data = make_vector(30, [&](std::size_t i) { return noise(comm.rank(), i); });
      codec->allreduce_mean(comm, data);
    });
  }
}

class Fp32OperationsTest : public ::testing::TestWithParam<int> {};

TEST_P(Fp32OperationsTest, ExactClosedFormForEveryOperation) {
  run_world(GetParam(), [&](Communicator& comm) {
    for (std::size_t count : {0, 1, 10, 1000, 100000}) {
      for (Algorithm algorithm :
           {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native}) {
        check_fp32_operations_exact(comm, count, algorithm);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fp32OperationsTest, ::testing::Values(1, 2, 3, 4, 7));

// `rounds` independent steps of a reduce-scatter mean (blocks gathered
// from every rank) or an allgather (rank 0's output), each element's sample
// mean against the exact value at 5σ, and the joint drifts (see
// codec_statistics.h). One codec of `spec` runs every round, unless
// `codec_for_round` makes each round's own (a codec whose state must start
// over).
using CodecFactory = std::function<std::unique_ptr<Codec>(int round)>;
void expect_unbiased_operation(const std::string& spec, CodecOperation operation, int ranks,
                               Algorithm algorithm, std::size_t d, int rounds,
                               const CodecFactory& codec_for_round = {}) {
  std::vector<double> exact;
  if (operation == CodecOperation::allgather) {
    for (int q = 0; q < ranks; ++q) {
      for (std::size_t i = 0; i < d; ++i) exact.push_back(noise(q, i));
    }
  } else {
    exact.assign(d, 0.0);
    for (int q = 0; q < ranks; ++q) {
      for (std::size_t i = 0; i < d; ++i) exact[i] += noise(q, i) / static_cast<double>(ranks);
    }
  }
  std::vector<std::vector<float>> results(static_cast<std::size_t>(rounds),
                                          std::vector<float>(exact.size()));
  std::mutex mutex;
  run_world(ranks, [&](Communicator& comm) {
    auto codec = make_codec(spec, {.seed = 31, .bucket = 3});
    CollectiveOptions options;
    options.algorithm = algorithm;
    options.chunk_bytes = 64;
    const auto input = make_vector(d, [&](std::size_t i) { return noise(comm.rank(), i); });
    const Range mine = codec->reduce_scatter_blocks(d, ranks)[static_cast<std::size_t>(comm.rank())];
    std::vector<float> output(operation == CodecOperation::allgather ? exact.size() : mine.count);
    for (int round = 0; round < rounds; ++round) {
      if (codec_for_round) codec = codec_for_round(round);
      if (operation == CodecOperation::allgather) {
        codec->allgather(comm, input, output, options);
      } else {
        codec->reduce_scatter_mean(comm, input, output, options);
      }
      std::lock_guard lock(mutex);
      auto& into = results[static_cast<std::size_t>(round)];
      if (operation == CodecOperation::allgather) {
        if (comm.rank() == 0) into = output;
      } else {
        std::copy(output.begin(), output.end(), into.begin() + static_cast<long>(mine.first));
      }
    }
  });
  expect_unbiased(spec + " " + std::string(to_string(operation)), results, exact);
}

using UnbiasedParam = std::tuple<std::string, CodecOperation, int, Algorithm>;
class UnbiasedOperationTest : public ::testing::TestWithParam<UnbiasedParam> {};

TEST_P(UnbiasedOperationTest, EveryElementAndTheirSumsAtFiveSigma) {
  const auto& [spec, operation, ranks, algorithm] = GetParam();
  expect_unbiased_operation(spec, operation, ranks, algorithm, 96, 1500);
}

INSTANTIATE_TEST_SUITE_P(
    Stochastic, UnbiasedOperationTest,
    ::testing::Combine(::testing::Values(std::string("global-qsgd"),
                                         std::string("global-qsgd:bits=4"),
                                         std::string("global-qsgd:dither=exp"),
                                         std::string("qsgd:bucket=128")),
                       ::testing::Values(CodecOperation::reduce_scatter_mean,
                                         CodecOperation::allgather),
                       ::testing::Values(3, 4),
                       ::testing::Values(Algorithm::ring, Algorithm::halving_doubling)),
    [](const ::testing::TestParamInfo<UnbiasedParam>& info) {
      return test_name(std::get<0>(info.param) + "_" +
                       std::string(to_string(std::get<1>(info.param))) + "_n" +
                       std::to_string(std::get<2>(info.param)) + "_" +
                       std::string(to_string(std::get<3>(info.param))));
    });

// IntSGD's integer rounding after the exact first step: each round a fresh
// codec, its scale from one SGD update fed before the step.
TEST(UnbiasedOperationTest, IntSgdReduceScatterMean) {
  const std::vector<float> update(96, 0.01f);
  expect_unbiased_operation("intsgd:beta=0", CodecOperation::reduce_scatter_mean, 3,
                            Algorithm::ring, 96, 1500, [&](int round) {
                              auto codec = make_codec(
                                  "intsgd:beta=0",
                                  {.seed = 31 + static_cast<std::uint64_t>(round), .bucket = 3});
                              codec->step_feedback()->observe_step(0.5, update);
                              return codec;
                            });
}

}  // namespace
}  // namespace qccl::test
