// The data-parallel engine and `train`: replicas stay bitwise identical for
// every codec, fp32 data parallelism equals one process on the concatenated
// batch, resume equals an uninterrupted run, non-finite gradients and
// mismatched settings fail clearly, and a real run learns Fashion-MNIST.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "qccl/common/errors.h"
#include "qccl/data/click_data.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/engines/step_algorithm.h"
#include "qccl/models/tasks.h"
#include "qccl/training/train_config.h"
#include "engines/one_process.h"
#include "engines/train_helpers.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;
using test::run_world;
using namespace test_support;

class EveryCodec : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryCodec, ReplicasStayBitwiseIdentical) {
  const auto runs = train_on(3, short_run(GetParam()));
  ASSERT_FALSE(runs[0].final_parameters.empty());
  EXPECT_GT(runs[0].buckets, 1u);
  for (int r = 1; r < 3; ++r) {
    EXPECT_TRUE(bitwise_equal(runs[0].final_parameters, runs[static_cast<std::size_t>(r)].final_parameters))
        << "rank " << r << " differs from rank 0";
  }
  // Training moved the parameters away from their initial values on a
  // consistent loss: finite everywhere.
  for (float x : runs[0].final_parameters) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(runs[0].steps, 4u);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, EveryCodec,
    ::testing::Values("fp32", "fp16", "global-qsgd:bits=8", "global-qsgd:bits=4",
                      "global-qsgd:bits=8,dither=exp", "global-qsgd:bits=8,norm=2", "qsgd",
                      "intsgd", "intsgd:wire=int32,round=deterministic", "intsgd-heuristic",
                      "intdiana", "ef(global-qsgd:bits=4)", "ef(intsgd)", "terngrad",
                      "natural", "topk", "randk", "randk:scale=unbiased,ef=off", "dgc",
                      "signsgd", "signum", "ef-signsgd", "onebit", "powersgd"),
    [](const auto& info) {
      std::string name;
      for (char ch : std::string(info.param)) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

// fp32 data parallelism is exactly the SGD of one process on the
// concatenation of the ranks' batches (up to float summation order): here
// against a plain libtorch loop over the same samples.
TEST(Engine, Fp32MatchesSingleProcessOnTheConcatenatedBatch) {
  auto config = short_run("fp32");
  config.max_steps_per_epoch = 6;
  const int ranks = 3;
  const auto runs = train_on(ranks, config);

  // One process, batch 3·16, on the epoch's samples from `shift` on.
  const auto reference = [&](std::size_t shift) {
    return worst_difference(one_process_sgd(config, ranks, 6, shift), runs[0].final_parameters);
  };
  // The same samples: only the order of fp32 additions differs.
  const double same = reference(0);
  EXPECT_LT(same, 1e-5);
  EXPECT_GT(same, 0.0) << "suspiciously exact: is the engine running at all?";
  // Batches shifted by one sample: the tolerance above is far below the
  // effect of training on different data.
  EXPECT_GT(reference(1), 100 * 1e-5);
}

// A run interrupted and resumed from its checkpoint ends bitwise equal to an
// uninterrupted one: model, optimizer state, codec state (IntSGD's scales,
// the step counters that key the randomness) and the data position.
void expect_resume_is_exact(const std::string& codec, const std::string& optimizer,
                            std::size_t stop_after, const std::string& schedule = "constant") {
  auto config = short_run(codec);
  config.optimizer = optimizer;
  config.lr_schedule = schedule;
  if (schedule != "constant") config.warmup_steps = 3;
  if (optimizer != "sgd") config.lr = 0.001;
  config.epochs = 2;
  config.max_steps_per_epoch = 5;
  const auto whole = train_on(2, config);
  const auto resumed = interrupted_and_resumed(2, config, stop_after);
  EXPECT_EQ(resumed[0].steps, 10 - stop_after);
  EXPECT_TRUE(bitwise_equal(whole[0].final_parameters, resumed[0].final_parameters))
      << codec << " with " << optimizer << " resumed after " << stop_after << " steps";
  EXPECT_TRUE(bitwise_equal(whole[1].final_parameters, resumed[1].final_parameters));
}

TEST(Resume, MidEpochWithIntSgdAndMomentum) { expect_resume_is_exact("intsgd", "sgd", 3); }
TEST(Resume, AcrossEpochsWithExpDitherAndAdam) {
  expect_resume_is_exact("global-qsgd:bits=8,dither=exp", "adam", 7);
}
TEST(Resume, IntDianaShiftsWithAdamW) { expect_resume_is_exact("intdiana", "adamw", 4); }
TEST(Resume, CosineScheduleWithWarmupAndIntSgd) {
  expect_resume_is_exact("intsgd", "sgd", 6, "cosine");
}
// The residuals live in the per-tensor store, saved once per checkpoint.
TEST(Resume, ErrorFeedbackResidualsAcrossAnEpoch) {
  expect_resume_is_exact("ef(global-qsgd:bits=4)", "sgd", 7);
}

// Codec state of the baselines: PowerSGD's Q and residuals, DGC's momentum
// and accumulation, SigNUM's momentum, Top-k's residuals.
TEST(Resume, PowerSgdWarmStartAndResiduals) { expect_resume_is_exact("powersgd", "sgd", 3); }
TEST(Resume, DgcMomentumAndAccumulation) { expect_resume_is_exact("dgc:warmup=4", "sgd", 6); }
TEST(Resume, SignumMomentumWithAdam) { expect_resume_is_exact("signum", "adam", 4); }
TEST(Resume, TopkResidualsAcrossAnEpoch) { expect_resume_is_exact("topk", "sgd", 7); }

// Embedding tables updated row-wise (their moments or row accumulators in
// libtorch's checkpoint format, the engine handing the means on as rows).
void expect_row_update_resumes_exactly(const std::string& embedding_optimizer) {
  TrainConfig config;
  config.model = "recommender";
  config.codec = CodecSpec::parse("global-qsgd:bits=8,sparse=auto");
  config.values_per_field = 200;
  config.click_samples = 4000;
  config.optimizer = "adam";
  config.lr = 0.003;
  config.embedding_optimizer = embedding_optimizer;
  config.embedding_lr = embedding_optimizer == "rowwise-adagrad" ? 0.05 : 0.0;
  config.batch = 32;
  config.epochs = 2;
  config.max_steps_per_epoch = 5;
  config.progress = false;
  config.return_parameters = true;
  const auto whole = train_on(2, config);
  const auto resumed = interrupted_and_resumed(2, config, 3);
  EXPECT_TRUE(bitwise_equal(whole[0].final_parameters, resumed[0].final_parameters)) << embedding_optimizer;
  EXPECT_TRUE(bitwise_equal(whole[0].final_parameters, whole[1].final_parameters));
}
TEST(Resume, LazyAdamTables) { expect_row_update_resumes_exactly("lazy-adam"); }
TEST(Resume, RowwiseAdagradTables) { expect_row_update_resumes_exactly("rowwise-adagrad"); }

TEST(Resume, RefusesAnotherRankCountAndMissingCheckpoint) {
  auto config = short_run("fp32");
  const auto dir = scratch_dir("resume-ranks");
  config.checkpoint_dir = dir.string();
  train_on(2, config);
  config.resume = true;
  EXPECT_THROW(train_on(3, config), InvalidArgument);
  config.checkpoint_dir = scratch_dir("resume-none").string();
  EXPECT_THROW(train_on(2, config), InvalidArgument);
}

TEST(Files, ExistingLogAndCheckpointAreKeptUnlessForced) {
  const auto dir = scratch_dir("keep");
  fs::create_directories(dir);
  auto config = short_run("fp32");
  config.log_path = (dir / "log.jsonl").string();
  std::ofstream(config.log_path) << "{\"earlier\": true}\n";
  try {
    train_on(2, config);
    FAIL() << "an existing log was overwritten";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos);
  }
  std::ifstream kept(config.log_path);
  std::string first;
  std::getline(kept, first);
  EXPECT_EQ(first, "{\"earlier\": true}");

  config.force = true;
  train_on(2, config);
  std::ifstream log(config.log_path);
  std::string line, last;
  std::size_t steps = 0;
  while (std::getline(log, line)) {
    last = line;
    if (line.find("\"event\":\"step\"") == std::string::npos) continue;
    ++steps;
    // Every step's page faults, so a regression shows in the log.
    for (const char* key : {"\"page_faults\"", "\"optimizer_page_faults\"",
                            "\"communication_page_faults\""}) {
      EXPECT_NE(line.find(key), std::string::npos) << key << " missing from " << line;
    }
  }
  EXPECT_EQ(steps, 4u);
  EXPECT_NE(last.find("\"event\":\"summary\""), std::string::npos);
  EXPECT_NE(last.find("\"compression_ratio\""), std::string::npos);
  EXPECT_NE(last.find("\"steady_page_faults\":{\"max\""), std::string::npos) << last;
}

TEST(Errors, NonFiniteGradientsNameTheStepAndBucketOrAreSkipped) {
  auto config = short_run("global-qsgd:bits=8");
  config.lr = 1e30;  // the first step makes the logits overflow
  std::string message;
  try {
    train_on(2, config);
  } catch (const NonFiniteError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("step 1, bucket"), std::string::npos) << message;
  EXPECT_NE(message.find("--skip-nonfinite"), std::string::npos) << message;

  config.skip_nonfinite = true;
  const auto runs = train_on(2, config);
  EXPECT_EQ(runs[0].steps, 4u);
  EXPECT_EQ(runs[0].skipped_steps, 3u);
}

TEST(Errors, SettingsThatDifferAcrossRanksFailOnEveryRank) {
  const auto message = test::expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto config = short_run("fp32");
    if (comm.rank() == 1) config.lr = 0.1;
    train(comm, config);
  });
  EXPECT_NE(message.find("optimizer"), std::string::npos) << message;
}

TEST(Errors, UnknownNamesAndMissingDataAreInvalidArguments) {
  auto config = short_run("fp32");
  config.model = "resnet";
  EXPECT_THROW(validate(config), InvalidArgument);
  EXPECT_THROW(short_run("zip"), InvalidArgument);  // the codec spec, where it is parsed
  config = short_run("fp32");
  config.data = "fortunes";
  EXPECT_THROW(validate(config), InvalidArgument);
  config = short_run("fp32");
  config.data_dir = "/nonexistent";
  EXPECT_THROW(train_on(1, config), InvalidArgument);
}

// Engine-level: the mean gradient is exact for fp32 (closed form), an
// unused parameter gets zero, and buckets complete in any hook order.
TEST(Engine, MeanGradientsAndUnusedParameters) {
  run_world(3, [](Communicator& comm) {
    auto a = torch::zeros({5}, torch::requires_grad());
    auto b = torch::zeros({3}, torch::requires_grad());
    auto unused = torch::zeros({2}, torch::requires_grad());
    EngineOptions options;
    options.policy = std::make_shared<SizeCappedPolicy>(16, 8);  // one tensor per bucket
    DataParallelEngine engine(comm, {{"a", a}, {"b", b}, {"unused", unused}}, options);
    EXPECT_EQ(engine.bucket_count(), 3u);
    const float r = static_cast<float>(comm.rank());
    for (int step = 0; step < 2; ++step) {
      engine.begin_step();
      // d/da = r + 1 (each element), d/db = 2r.
      ((r + 1) * a.sum() + 2 * r * b.sum()).backward();
      engine.finish_step();
      EXPECT_TRUE(torch::equal(a.grad(), torch::full({5}, 2.0f)));  // mean of 1, 2, 3
      EXPECT_TRUE(torch::equal(b.grad(), torch::full({3}, 2.0f)));  // mean of 0, 2, 4
      EXPECT_TRUE(torch::equal(unused.grad(), torch::zeros({2})));
    }
  });
}

// Buckets are reduced while backward continues: the gradient of `a` is
// computed after `b`'s, and a hook on `a` (running before the engine's)
// waits until `b`'s bucket has crossed the engine's transport. If the engine
// reduced only after backward, the wait would time out.
TEST(Engine, ReducesEarlyBucketsWhileBackwardContinues) {
  std::atomic<int> overlapped{0};
  run_world(2, [&](Communicator& comm) {
    auto a = torch::ones({1000}, torch::requires_grad());
    auto b = torch::ones({1000}, torch::requires_grad());
    const DataParallelEngine* engine_seen = nullptr;  // set once built; the hook comes first
    a.register_hook([&](const torch::Tensor&) {
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (engine_seen->bytes_sent() == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (engine_seen->bytes_sent() > 0) ++overlapped;
    });
    EngineOptions options;
    options.policy = std::make_shared<SizeCappedPolicy>(4000, 4000);  // a tensor per bucket
    DataParallelEngine engine(comm, {{"a", a}, {"b", b}}, options);
    engine_seen = &engine;
    ASSERT_EQ(engine.bucket_count(), 2u);
    ASSERT_EQ(engine.bytes_sent(), 0u);
    EXPECT_EQ(engine.plan().buckets[0], std::vector<std::size_t>{1});  // b first: reverse order
    engine.begin_step();
    (b * (a * 2)).sum().backward();  // d/db first, then d/da
    engine.finish_step();
    EXPECT_TRUE(torch::equal(a.grad(), torch::full({1000}, 2.0f)));
    EXPECT_TRUE(torch::equal(b.grad(), torch::full({1000}, 2.0f)));
  });
  EXPECT_EQ(overlapped.load(), 2) << "bucket 0 was not sent before backward reached `a`";
}

TEST(Engine, NonFiniteOnOneRankFailsEveryRankAndTheNextStepWorks) {
  const auto message = test::expect_throw_on_every_rank<NonFiniteError>(2, [](Communicator& comm) {
    auto w = torch::zeros({4}, torch::requires_grad());
    DataParallelEngine engine(comm, {{"w", w}}, EngineOptions{});
    engine.begin_step();
    const float bad = comm.rank() == 1 ? std::nanf("") : 1.0f;
    (bad * w.sum()).backward();
    try {
      engine.finish_step();
    } catch (const NonFiniteError&) {
      engine.begin_step();
      w.sum().backward();
      engine.finish_step();
      EXPECT_TRUE(torch::equal(w.grad(), torch::ones({4})));
      throw;
    }
  });
  EXPECT_NE(message.find("bucket 0 (w)"), std::string::npos) << message;
  EXPECT_NE(message.find("rank(s) 1"), std::string::npos) << message;
}

TEST(Engine, BroadcastMakesEveryReplicaEqualRankZero) {
  run_world(3, [](Communicator& comm) {
    auto w = torch::full({6}, static_cast<float>(comm.rank() + 1));
    w.set_requires_grad(true);
    DataParallelEngine engine(comm, {{"w", w}}, EngineOptions{});
    engine.broadcast_from_root();
    EXPECT_TRUE(torch::equal(w.detach(), torch::ones({6})));
  });
}

// A mismatch found mid-step (IntSGD's scales, from histories that differ)
// reaches the caller as a MismatchError with the step and bucket added, not
// as a generic communication error: its exit code stays that of a mismatch.
TEST(Engine, ErrorsKeepTheirTypeWhenTheStepAndBucketAreAdded) {
  const auto message = test::expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto w = torch::zeros({4}, torch::requires_grad());
    EngineOptions options;
    options.codec = CodecSpec::parse("intsgd");
    DataParallelEngine engine(comm, {{"w", w}}, options);
    engine.begin_step();
    w.sum().backward();
    engine.finish_step();
    engine.snapshot_parameters();
    w.detach().add_(comm.rank() == 0 ? 0.1 : 0.2);  // the ranks' updates differ
    engine.observe_update(0.1);
    engine.begin_step();
    w.sum().backward();
    engine.finish_step();
  });
  EXPECT_NE(message.find("step 1, bucket 0 (w): stream 'gradients': allreduce mean: ranks disagree "
                         "on 'codec'"),
            std::string::npos)
      << message;
}

// An extra-gradient-like step algorithm: two gradient oracles per step (the
// second at an extrapolated point) through the same engine, each an
// exchange, then one update. Both gradients are the exact means.
class TwoOracleStep final : public StepAlgorithm {
 public:
  std::string name() const override { return "two-oracle test"; }
  int oracles_per_step() const override { return 2; }
  void step(StepContext& context, StepOutcome& outcome) override {
    context.engine.compute_gradients(context.loss, outcome.oracle);
    auto parameters = context.engine.optimizer_parameters();
    first = parameters[0].grad().clone();
    torch::NoGradGuard no_grad;
    const auto saved = parameters[0].detach().clone();
    parameters[0].sub_(context.lr * first);  // extrapolate
    {
      torch::AutoGradMode enable(true);
      context.engine.compute_gradients(context.loss, outcome.oracle);
    }
    second = parameters[0].grad().clone();
    parameters[0].copy_(saved - context.lr * second);
  }
  torch::Tensor first, second;
};

TEST(StepAlgorithmTest, TwoOraclesPerStepFitTheEngineInterface) {
  run_world(3, [](Communicator& comm) {
    auto w = torch::full({3}, 1.0f);
    w.set_requires_grad(true);
    DataParallelEngine engine(comm, {{"w", w}}, EngineOptions{});
    torch::optim::SGD unused({w}, 0.1);
    const float r = static_cast<float>(comm.rank());
    // loss_r(w) = ½ (r+1) ‖w‖²: gradient (r+1) w, mean over 3 ranks 2w.
    StepContext context{engine, unused, [&] { return 0.5f * (r + 1) * (w * w).sum(); }, 0.25, 0.25};
    TwoOracleStep algorithm;
    StepOutcome outcome;
    algorithm.step(context, outcome);
    EXPECT_TRUE(torch::allclose(algorithm.first, torch::full({3}, 2.0f)));
    EXPECT_TRUE(torch::allclose(algorithm.second, torch::full({3}, 1.0f)));  // 2 · 0.5
    EXPECT_TRUE(torch::allclose(w.detach(), torch::full({3}, 0.75f)));        // 1 − 0.25 · 1
    EXPECT_EQ(engine.steps_begun(), 2u);
    EXPECT_FLOAT_EQ(static_cast<float>(outcome.oracle.loss), 0.5f * (r + 1) * 3);
  });
  EXPECT_EQ(make_step_algorithm("gradient")->oracles_per_step(), 1);
  EXPECT_THROW(make_step_algorithm("extragradient"), InvalidArgument);
}

TEST(Engine, DifferentModelsOnRanksAreAMismatch) {
  test::expect_throw_on_every_rank<MismatchError>(2, [](Communicator& comm) {
    auto w = torch::zeros({comm.rank() == 0 ? 4 : 5}, torch::requires_grad());
    DataParallelEngine engine(comm, {{"w", w}}, EngineOptions{});
  });
}

// The acceptance run: one epoch of the CNN on Fashion-MNIST with
// Global-QSGD exponential 8-bit on 2 ranks reaches at least 80% test accuracy.
TEST(Learning, OneEpochCnnWithExpDitherReaches80Percent) {
  TrainConfig config;
  config.model = "cnn";
  config.codec = CodecSpec::parse("global-qsgd:bits=8,dither=exp");
  config.batch = 64;
  config.progress = false;
  const auto runs = train_on(2, config);
  ASSERT_EQ(runs[0].epochs.size(), 1u);
  EXPECT_GE(runs[0].final_metric, 0.80);
  EXPECT_NEAR(runs[0].compression_ratio, 4.0, 0.01);
}

// The other two tasks learn too, and their replicas stay identical. The
// recommender with small tables (8 fields × 100 values) beats the base
// rate of its test clicks (always predicting the majority label) by 5
// points in 2 epochs.
class RecommenderLearning : public ::testing::TestWithParam<const char*> {};

// Whatever updates the tables (Adam on every row, lazy Adam, row-wise
// Adagrad at its own rate), the model beats the majority class by 5 points.
TEST_P(RecommenderLearning, LearnsTheGeneratedClicks) {
  TrainConfig config;
  config.model = "recommender";
  config.codec = CodecSpec::parse("global-qsgd:bits=8,sparse=auto");
  config.embedding_optimizer = GetParam();
  if (config.embedding_optimizer == "rowwise-adagrad") config.embedding_lr = 0.1;
  config.values_per_field = 100;
  config.click_samples = 20000;
  config.optimizer = "adam";
  config.lr = 0.01;
  config.batch = 128;
  config.epochs = 2;
  config.progress = false;
  config.return_parameters = true;
  const auto runs = train_on(2, config);
  const data::ClickData clicks({config.fields, config.values_per_field, config.click_samples,
                                config.click_samples / 10},
                               config.seed);
  double clicked = 0;
  for (std::size_t i = 0; i < clicks.shape().test_samples; ++i) clicked += clicks.label(i, true);
  const double majority =
      std::max(clicked, static_cast<double>(clicks.shape().test_samples) - clicked) /
      static_cast<double>(clicks.shape().test_samples);
  EXPECT_EQ(runs[0].metric_name, "accuracy");
  EXPECT_GE(runs[0].final_metric, majority + 0.05) << "majority rate " << majority;
  EXPECT_TRUE(bitwise_equal(runs[0].final_parameters, runs[1].final_parameters));
}
INSTANTIATE_TEST_SUITE_P(EmbeddingOptimizers, RecommenderLearning,
                         ::testing::Values("dense", "lazy-adam", "rowwise-adagrad"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

// The character models: one that predicts uniformly has perplexity equal
// to the vocabulary (over 100 byte values in the fortunes); a few dozen
// steps on 2 ranks bring it below 35, with replicas bitwise identical.
void expect_perplexity_falls_far_below_the_vocabulary(TrainConfig config) {
  config.hidden = 64;
  config.sequence_length = 32;
  config.optimizer = "adam";
  config.batch = 32;
  config.progress = false;
  config.return_parameters = true;
  const auto runs = train_on(2, config);
  EXPECT_EQ(runs[0].metric_name, "perplexity");
  EXPECT_LT(runs[0].final_metric, 35.0) << config.model;
  EXPECT_GT(runs[0].final_metric, 1.0) << config.model;
  EXPECT_TRUE(bitwise_equal(runs[0].final_parameters, runs[1].final_parameters));
}

TEST(Learning, CharLstmPerplexityFallsFarBelowTheVocabulary) {
  TrainConfig config;
  config.model = "char-lstm";
  config.codec = CodecSpec::parse("intsgd");
  config.lr = 0.01;
  config.max_steps_per_epoch = 20;
  expect_perplexity_falls_far_below_the_vocabulary(config);
}

// The GPT-style decoder, its gradients exchanged by Q-GenX's 8-bit quantizer.
TEST(Learning, GptPerplexityFallsFarBelowTheVocabulary) {
  TrainConfig config;
  config.model = "gpt";
  config.codec = CodecSpec::parse("qgenx:bits=8");
  config.layers = 2;
  config.lr = 0.003;
  config.max_steps_per_epoch = 30;
  expect_perplexity_falls_far_below_the_vocabulary(config);
}

// The decoder is causal (changing a later character leaves the earlier
// positions' logits bit for bit), its output is tied to the token
// embedding (no head of its own), and its LayerNorms start as identities.
TEST(Gpt, IsCausalWithTiedOutputAndItsParameterCount) {
  TrainConfig config;
  config.model = "gpt";
  config.hidden = 64;
  config.layers = 3;
  config.sequence_length = 16;
  auto task = make_task(config);
  task->initialize(5);
  const std::vector<std::uint32_t> samples{0, 7};
  Batch batch = task->batch(samples, false);
  auto& model = task->model();
  const auto loss = task->loss(batch).item<double>();
  EXPECT_TRUE(std::isfinite(loss));
  std::int64_t vocabulary = 0, count = 0;
  for (const auto& item : model.named_parameters()) {
    count += item.value().numel();
    if (item.key() == "tokens.weight") vocabulary = item.value().size(0);
    EXPECT_EQ(item.key().find("head"), std::string::npos) << item.key();
    if (item.key().find("norm") != std::string::npos) {
      EXPECT_TRUE(torch::all(item.value() == (item.key().ends_with("weight") ? 1.0 : 0.0)).item<bool>())
          << item.key();
    }
  }
  const std::int64_t w = 64, per_block = 2 * 2 * w + (w * 3 * w + 3 * w) + (w * w + w) +
                                         (w * 4 * w + 4 * w) + (4 * w * w + w);
  EXPECT_EQ(count, vocabulary * w + 16 * w + 3 * per_block + 2 * w);
  // Causality: the logits of positions 0..14 ignore the last input character.
  using torch::indexing::Slice;
  auto changed = batch.input.clone();
  changed.index_put_({Slice(), 15}, (batch.input.index({Slice(), 15}) + 1) % vocabulary);
  const auto a = task->next_token_logits(batch.input);
  const auto b = task->next_token_logits(changed);
  ASSERT_EQ(a.sizes().vec(), (std::vector<std::int64_t>{2, 16, vocabulary}));
  EXPECT_TRUE(torch::equal(a.index({Slice(), Slice(0, 15)}), b.index({Slice(), Slice(0, 15)})));
  EXPECT_FALSE(torch::equal(a, b));
}

}  // namespace
}  // namespace qccl::engines
