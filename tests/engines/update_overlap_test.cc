// Overlapping the optimizer step with the exchange: the data-parallel
// engine hands each bucket's tensors out as soon as their means are in
// .grad, once, in bucket order; nothing is handed out when some rank's
// gradients are not finite; and training with the step taken bucket by
// bucket gives the same bits as one step after the last bucket.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/engines/train_config.h"
#include "engines/train_helpers.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using test_support::bitwise_equal;
using test_support::short_run;
using test_support::train_on;

// Five parameters of awkward sizes, each 0.5 + its index, and buckets of at
// most 64 bytes, so that the engine has several buckets of one or more
// tensors.
struct SmallModel {
  std::vector<NamedTensor> named;
  std::vector<torch::Tensor> tensors;
  SmallModel() {
    const std::int64_t sizes[] = {7, 3, 16, 1, 9};
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      auto p = torch::full({sizes[i]}, 0.5f + static_cast<float>(i), torch::requires_grad());
      named.emplace_back("p" + std::to_string(i), p);
      tensors.push_back(p);
    }
  }
  EngineOptions options() const {
    EngineOptions o;
    o.policy = std::make_shared<SizeCappedPolicy>(64, 32);
    return o;
  }
  // Rank r's loss: (r + 1) · Σ_i Σ p_i², whose gradient is 2(r + 1) p_i; the
  // mean over n ranks is (n + 1) p_i, exact in fp32 for these values.
  torch::Tensor loss(int rank) const {
    auto total = torch::zeros({});
    for (const auto& p : tensors) total = total + (p * p).sum();
    return total * static_cast<float>(rank + 1);
  }
};

class UpdateOverlapRanks : public ::testing::TestWithParam<int> {};

TEST_P(UpdateOverlapRanks, EachBucketIsHandedOutOnceInBucketOrderWithItsMeans) {
  const int n = GetParam();
  test::run_world(n, [n](Communicator& comm) {
    SmallModel model;
    DataParallelEngine engine(comm, model.named, model.options());
    ASSERT_GT(engine.bucket_count(), 2u);
    std::vector<std::vector<const void*>> parts;
    OracleResult result;
    engine.compute_gradients_in_parts(
        [&] { return model.loss(comm.rank()); }, result, [&](std::span<const torch::Tensor> part) {
          parts.emplace_back();
          for (const auto& p : part) {
            parts.back().push_back(p.unsafeGetTensorImpl());
            EXPECT_TRUE(torch::equal(p.grad(), p.detach() * static_cast<float>(n + 1)));
          }
        });
    ASSERT_EQ(parts.size(), engine.bucket_count());
    for (std::size_t b = 0; b < parts.size(); ++b) {
      const auto& tensors = engine.plan().buckets[b];
      ASSERT_EQ(parts[b].size(), tensors.size()) << "bucket " << b;
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        EXPECT_EQ(parts[b][i], model.tensors[tensors[i]].unsafeGetTensorImpl()) << "bucket " << b;
      }
    }
  });
}

// Training with the step taken bucket by bucket gives the bits of one step
// after the last bucket, on every rank count.
TEST_P(UpdateOverlapRanks, TrainingGivesTheBitsOfOneStepAfterTheLastBucket) {
  auto config = short_run("global-qsgd:bits=8");
  config.optimizer = "adam";
  config.lr = 0.01;
  const auto overlapped = train_on(GetParam(), config);
  config.overlap_updates = false;
  const auto after_last = train_on(GetParam(), config);
  EXPECT_GT(overlapped[0].buckets, 2u);
  EXPECT_TRUE(bitwise_equal(overlapped[0].final_parameters, after_last[0].final_parameters));
  EXPECT_TRUE(
      bitwise_equal(overlapped[0].final_parameters, overlapped.back().final_parameters));
}

INSTANTIATE_TEST_SUITE_P(Ranks, UpdateOverlapRanks, ::testing::Values(1, 2, 3, 4, 7));

// The other optimizers, and a codec that takes the optimizer's feedback
// (IntSGD's scale comes from the update x_{k+1} − x_k).
TEST(UpdateOverlap, EveryOptimizerAndFeedbackCodecGiveTheSameBits) {
  struct Case {
    const char* optimizer;
    const char* codec;
  };
  for (const Case c : {Case{"sgd", "intsgd"}, Case{"adamw", "fp16"}, Case{"sgd", "fp32"}}) {
    auto config = short_run(c.codec);
    config.optimizer = c.optimizer;
    config.momentum = 0.9;
    config.weight_decay = 0.01;
    const auto overlapped = train_on(3, config);
    config.overlap_updates = false;
    const auto after_last = train_on(3, config);
    EXPECT_TRUE(bitwise_equal(overlapped[0].final_parameters, after_last[0].final_parameters))
        << c.optimizer << " with " << c.codec;
  }
}

// NaN on one rank, in the bucket reduced last: every rank gets the
// NonFiniteError and no part is handed out, so no parameter moves — a
// skipped step stays skipped.
TEST(UpdateOverlap, NonFiniteGradientsOnOneRankHandOutNothing) {
  test::expect_throw_on_every_rank<NonFiniteError>(3, [](Communicator& comm) {
    SmallModel model;
    DataParallelEngine engine(comm, model.named, model.options());
    const std::size_t last = engine.plan().buckets.back().front();
    int parts = 0;
    OracleResult result;
    try {
      engine.compute_gradients_in_parts(
          [&] {
            auto loss = model.loss(comm.rank());
            if (comm.rank() == 2) {
              loss = loss + model.tensors[last].sum() * std::numeric_limits<float>::quiet_NaN();
            }
            return loss;
          },
          result, [&](std::span<const torch::Tensor>) { ++parts; });
    } catch (const NonFiniteError&) {
      EXPECT_EQ(parts, 0);
      throw;
    }
  });
}

// An update that fails ends the step all the same: the error comes out, and
// the engine runs the next step.
TEST(UpdateOverlap, AFailingUpdateStillEndsTheStep) {
  test::run_world(2, [](Communicator& comm) {
    SmallModel model;
    DataParallelEngine engine(comm, model.named, model.options());
    OracleResult result;
    const auto loss = [&] { return model.loss(comm.rank()); };
    EXPECT_THROW(engine.compute_gradients_in_parts(
                     loss, result,
                     [](std::span<const torch::Tensor>) { throw std::runtime_error("update"); }),
                 std::runtime_error);
    int parts = 0;
    engine.compute_gradients_in_parts(loss, result,
                                      [&](std::span<const torch::Tensor>) { ++parts; });
    EXPECT_EQ(parts, static_cast<int>(engine.bucket_count()));
  });
}

}  // namespace
}  // namespace qccl::engines
