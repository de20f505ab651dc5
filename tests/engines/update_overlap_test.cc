// Overlapping the optimizer step with the exchange: the data-parallel
// engine hands each bucket's tensors out as soon as their means are in
// .grad, once, in bucket order; nothing is handed out when some rank's
// gradients are not finite; and training with the step taken bucket by
// bucket gives the same bits as one step after the last bucket. The
// timeline of exchanges and updates that the engine reports (and the
// training log carries) keeps that order.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/training/train_config.h"
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

// The oracle's timeline: one exchange per bucket, one after another on the
// communication thread, and each bucket's update only after its exchange
// ended, all within the oracle's own time.
TEST_P(UpdateOverlapRanks, TheTimelineHasEachBucketsExchangeBeforeItsUpdate) {
  test::run_world(GetParam(), [](Communicator& comm) {
    SmallModel model;
    DataParallelEngine engine(comm, model.named, model.options());
    const std::size_t buckets = engine.bucket_count();
    const auto loss = [&] { return model.loss(comm.rank()); };
    OracleResult result;
    const auto start = Clock::now();
    engine.compute_gradients_in_parts(loss, result, [](std::span<const torch::Tensor>) {});
    const double elapsed = seconds_since(start);
    ASSERT_EQ(result.exchanges.size(), buckets);
    ASSERT_EQ(result.updates.size(), buckets);
    for (std::size_t b = 0; b < buckets; ++b) {
      const auto& exchange = result.exchanges[b];
      const auto& update = result.updates[b];
      EXPECT_LE(0.0, exchange.start) << "bucket " << b;
      EXPECT_LE(exchange.start, exchange.end) << "bucket " << b;
      EXPECT_LE(exchange.end, update.start) << "bucket " << b;
      EXPECT_LE(update.start, update.end) << "bucket " << b;
      EXPECT_LE(update.end, elapsed) << "bucket " << b;
      if (b + 1 < buckets) {
        EXPECT_LE(exchange.end, result.exchanges[b + 1].start) << "bucket " << b;
        EXPECT_LE(update.end, result.updates[b + 1].start) << "bucket " << b;
      }
    }
    // A second oracle of the step (here without parts, so with no updates
    // to time) adds its exchanges on the same time axis, after the first's.
    engine.compute_gradients(loss, result);
    ASSERT_EQ(result.exchanges.size(), 2 * buckets);
    EXPECT_EQ(result.updates.size(), buckets);
    EXPECT_LE(result.updates.back().end, result.exchanges[buckets].start);
    EXPECT_LE(result.exchanges.back().end, seconds_since(start));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, UpdateOverlapRanks, ::testing::Values(1, 2, 3, 4, 7));

// The training log carries each step's timeline: [start, end] of every
// bucket's exchange and, with overlapped updates, of every bucket's update.
TEST(UpdateOverlap, TheLogHasEveryStepsExchangesAndUpdates) {
  auto config = short_run("global-qsgd:bits=8");
  config.optimizer = "adam";
  const auto dir = test_support::scratch_dir("timeline");
  std::filesystem::create_directories(dir);
  config.log_path = (dir / "log.jsonl").string();
  config.force = true;
  const auto results = train_on(2, config);
  const std::size_t buckets = results[0].buckets;
  ASSERT_GT(buckets, 2u);
  std::ifstream log(config.log_path);
  std::string line;
  std::size_t steps = 0;
  while (std::getline(log, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("event", "") != "step") continue;
    ++steps;
    const auto& exchanges = record.at("exchanges");
    const auto& updates = record.at("updates");
    ASSERT_EQ(exchanges.size(), buckets) << line;
    ASSERT_EQ(updates.size(), buckets) << line;
    for (std::size_t b = 0; b < buckets; ++b) {
      EXPECT_LE(exchanges[b][0].get<double>(), exchanges[b][1].get<double>()) << line;
      EXPECT_LE(exchanges[b][1].get<double>(), updates[b][0].get<double>()) << line;
      EXPECT_LE(updates[b][1].get<double>(), record.at("seconds").get<double>()) << line;
    }
  }
  EXPECT_EQ(steps, 4u);
  std::filesystem::remove_all(dir);
}

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
