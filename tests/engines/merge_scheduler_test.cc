// Re-planning buckets and MergeComp in training: the engine's profile of a
// step (when each gradient is ready), a re-plan that keeps per-tensor codec
// state (error-feedback residuals) so that a run switched from one bucket to
// groups G equals a run that had G from the start, a checkpoint that carries
// the plan, and `train --buckets mergecomp`: the same plan on every rank, the
// plan's groups equal to the same groups given by hand, and a resume after
// planning that keeps the plan.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/training/train_config.h"
#include "engines/train_helpers.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using test_support::bitwise_equal;
using test_support::scratch_dir;
using test_support::short_run;
using test_support::train_on;

// Six parameters of awkward sizes, used in a chain so that backward reaches
// them last to first; p5 takes no part in the loss.
struct ChainModel {
  std::vector<NamedTensor> named;
  std::vector<torch::Tensor> tensors;
  ChainModel() {
    const std::int64_t sizes[] = {13, 5, 31, 2, 17, 3};
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      auto p = torch::linspace(-1.0, 1.0 + 0.1 * static_cast<double>(i), sizes[i]).requires_grad_();
      named.emplace_back("p" + std::to_string(i), p);
      tensors.push_back(p);
    }
  }
  // A loss whose gradients differ by rank and step, with elements of very
  // different sizes, so that Top-k keeps some and leaves residuals.
  torch::Tensor loss(int rank, int step) const {
    auto total = torch::zeros({});
    for (std::size_t i = 0; i + 1 < tensors.size(); ++i) {
      const auto& p = tensors[i];
      const auto weights = torch::sin(torch::arange(p.numel()).to(torch::kFloat) *
                                      static_cast<float>(rank + 2 * step + 1));
      total = total + (weights * p * p * p).sum() * static_cast<float>(i + 1);
    }
    return total;
  }
  std::vector<float> flat() const {
    std::vector<float> out;
    for (const auto& p : tensors) {
      const auto c = p.detach().contiguous();
      out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    }
    return out;
  }
};

// Plain SGD steps from..to−1 on `model` through `engine`.
void sgd_steps(Communicator& comm, DataParallelEngine& engine, ChainModel& model, int from, int to) {
  for (int step = from; step < to; ++step) {
    OracleResult result;
    engine.compute_gradients([&] { return model.loss(comm.rank(), step); }, result);
    torch::NoGradGuard no_grad;
    for (auto& p : model.tensors) p.sub_(p.grad() * 0.01f);
  }
}

// `steps` steps of plain SGD; before `switch_at`, `first` is the layout.
std::vector<float> run_steps(Communicator& comm, std::shared_ptr<const BucketPolicy> first,
                             std::shared_ptr<const BucketPolicy> then, int switch_at, int steps,
                             const std::string& codec) {
  ChainModel model;
  EngineOptions options;
  options.codec = CodecSpec::parse(codec);
  options.seed = 5;
  options.policy = first;
  DataParallelEngine engine(comm, model.named, options);
  sgd_steps(comm, engine, model, 0, switch_at);
  engine.replan(then);
  sgd_steps(comm, engine, model, switch_at, steps);
  return model.flat();
}

class ReplanRanks : public ::testing::TestWithParam<int> {};

// Top-k with select=tensor picks per tensor and sums pairs in rank order, so
// its results do not depend on the layout, only on the residuals it carries:
// the re-planned run equals the fixed one exactly when every residual
// carried over.
TEST_P(ReplanRanks, ResidualsCarryOverSoTheSwitchedRunEqualsTheFixedLayout) {
  const int n = GetParam();
  const std::string codec = "topk:ratio=0.2,select=tensor";
  const auto one = std::make_shared<SingleBucketPolicy>();
  const auto groups = std::make_shared<GroupsPolicy>(GroupSizes{2, 1, 3});
  std::vector<std::vector<float>> switched(n), fixed(n);
  test::run_world(n, [&](Communicator& comm) {
    switched[comm.rank()] = run_steps(comm, one, groups, 3, 6, codec);
    fixed[comm.rank()] = run_steps(comm, groups, groups, 0, 6, codec);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(bitwise_equal(switched[r], fixed[r])) << "rank " << r;
    EXPECT_TRUE(bitwise_equal(switched[r], switched[0])) << "rank " << r;
  }
}

// The control: the same switch onto a fresh engine (a new store, residuals
// lost) gives other parameters, so the test above can fail.
TEST(Replan, LosingTheResidualsChangesTheResult) {
  std::vector<float> kept, lost;
  test::run_world(2, [&](Communicator& comm) {
    const auto one = std::make_shared<SingleBucketPolicy>();
    const auto groups = std::make_shared<GroupsPolicy>(GroupSizes{2, 1, 3});
    const auto k = run_steps(comm, one, groups, 3, 6, "topk:ratio=0.2,select=tensor");
    ChainModel model;
    EngineOptions options;
    options.codec = CodecSpec::parse("topk:ratio=0.2,select=tensor");
    options.seed = 5;
    options.policy = one;
    {
      DataParallelEngine engine(comm, model.named, options);
      sgd_steps(comm, engine, model, 0, 3);
    }
    options.policy = groups;
    DataParallelEngine fresh(comm, model.named, options);
    sgd_steps(comm, fresh, model, 3, 6);
    if (comm.rank() == 0) {
      kept = k;
      lost = model.flat();
    }
  });
  EXPECT_FALSE(bitwise_equal(kept, lost));
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReplanRanks, ::testing::Values(1, 2, 3, 4, 7));

TEST(Replan, TheProfileHasEveryReachedGradientBeforeBackwardEnds) {
  test::run_world(2, [](Communicator& comm) {
    ChainModel model;
    EngineOptions options;
    options.policy = std::make_shared<SingleBucketPolicy>();
    DataParallelEngine engine(comm, model.named, options);
    OracleResult result;
    engine.compute_gradients([&] { return model.loss(comm.rank(), 0); }, result);
    const auto& ready = engine.ready_seconds();
    ASSERT_EQ(ready.size(), 6u);
    for (std::size_t t = 0; t < 5; ++t) {
      EXPECT_GE(ready[t], 0.0) << "p" << t;
      EXPECT_LE(ready[t], engine.backward_seconds()) << "p" << t;
    }
    EXPECT_TRUE(std::isnan(ready[5])) << "p5 takes no part in the loss";
    EXPECT_EQ(engine.tensor_elements(), (std::vector<std::size_t>{13, 5, 31, 2, 17, 3}));
  });
}

TEST(Replan, IsRefusedInsideAStepAndWithoutAPolicy) {
  test::run_world(1, [](Communicator& comm) {
    ChainModel model;
    DataParallelEngine engine(comm, model.named, EngineOptions{});
    EXPECT_THROW(engine.replan(nullptr), InvalidArgument);
    engine.begin_step();
    EXPECT_THROW(engine.replan(std::make_shared<LayerwisePolicy>()), InvalidArgument);
    model.loss(0, 0).backward();
    engine.finish_step();
    EXPECT_THROW(engine.replan(std::make_shared<GroupsPolicy>(GroupSizes{2, 2})), InvalidArgument);
  });
}

// A checkpoint holds the layout: an engine that starts with one bucket and
// loads it takes the saved groups, and the next steps agree bit for bit.
TEST(Replan, ACheckpointCarriesThePlan) {
  test::run_world(2, [](Communicator& comm) {
    ChainModel a_model, b_model;
    EngineOptions options;
    options.codec = CodecSpec::parse("topk:ratio=0.2,select=tensor");
    options.policy = std::make_shared<SingleBucketPolicy>();
    DataParallelEngine a(comm, a_model.named, options);
    DataParallelEngine b(comm, b_model.named, options);
    a.replan(std::make_shared<GroupsPolicy>(GroupSizes{1, 4, 1}));
    OracleResult result;
    a.compute_gradients([&] { return a_model.loss(comm.rank(), 0); }, result);
    torch::serialize::OutputArchive out;
    a.save(out);
    std::ostringstream bytes;
    out.save_to(bytes);
    torch::serialize::InputArchive in;
    std::istringstream read(bytes.str());
    in.load_from(read);
    b.load(in);
    EXPECT_EQ(group_sizes_of(b.plan()), (GroupSizes{1, 4, 1}));
    EXPECT_EQ(b.policy().name(), "groups:1,4,1");
    for (int step = 1; step < 3; ++step) {
      OracleResult ra, rb;
      a.compute_gradients([&] { return a_model.loss(comm.rank(), step); }, ra);
      b.compute_gradients([&] { return b_model.loss(comm.rank(), step); }, rb);
      for (std::size_t t = 0; t < a_model.tensors.size(); ++t) {
        EXPECT_TRUE(torch::equal(a_model.tensors[t].grad(), b_model.tensors[t].grad()))
            << "step " << step << " p" << t;
      }
    }
  });
}

TrainConfig mergecomp_run(const std::string& codec) {
  auto c = short_run(codec);
  c.buckets = "mergecomp";
  c.plan_steps = 3;
  c.max_steps_per_epoch = 6;
  return c;
}

// Every rank trains with the same plan; the plan's groups add up to the
// model's tensors; its predictions come with the named plans'.
TEST(MergeCompTraining, EveryRankTrainsWithTheSamePlan) {
  for (const int n : {2, 3}) {
    auto c = mergecomp_run("fp32");
    c.plan_max_groups = 3;
    const auto runs = train_on(n, c);
    ASSERT_TRUE(runs[0].plan.has_value());
    const auto& plan = *runs[0].plan;
    EXPECT_EQ(plan.profiled_steps, 2u) << "the first step is not profiled";
    EXPECT_EQ(plan.tensors, 6u);
    ASSERT_EQ(plan.predictions.size(), 4u);
    EXPECT_EQ(plan.predictions[0].name, "mergecomp");
    EXPECT_EQ(plan.predictions[1].groups, GroupSizes(6, 1));
    EXPECT_EQ(plan.predictions[2].groups, GroupSizes{6});
    const auto& chosen = plan.predictions[0].groups;
    EXPECT_EQ(std::accumulate(chosen.begin(), chosen.end(), std::size_t{0}), 6u);
    EXPECT_LE(chosen.size(), 3u);
    EXPECT_EQ(runs[0].bucket_policy, "groups:" + format_group_sizes(chosen));
    EXPECT_EQ(runs[0].buckets, chosen.size());
    EXPECT_GT(plan.codec_per_element + plan.communication_per_element, 0.0);
    for (const auto& p : plan.predictions) EXPECT_GT(p.seconds, 0.0) << p.name;
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(runs[r].bucket_policy, runs[0].bucket_policy) << "rank " << r;
      EXPECT_TRUE(bitwise_equal(runs[r].final_parameters, runs[0].final_parameters)) << "rank " << r;
    }
  }
}

// The planned run trains exactly as the same groups given by hand (Top-k
// with select=tensor: the first steps' single bucket gives the same bits as
// any layout).
TEST(MergeCompTraining, APlannedRunEqualsItsGroupsGivenByHand) {
  const auto planned = train_on(2, mergecomp_run("topk:ratio=0.1,select=tensor"));
  auto by_hand = short_run("topk:ratio=0.1,select=tensor");
  by_hand.max_steps_per_epoch = 6;
  by_hand.buckets = planned[0].bucket_policy;
  const auto given = train_on(2, by_hand);
  EXPECT_EQ(given[0].bucket_policy, planned[0].bucket_policy);
  EXPECT_FALSE(given[0].plan.has_value());
  EXPECT_TRUE(bitwise_equal(planned[0].final_parameters, given[0].final_parameters));
}

// A checkpoint after planning holds the plan: the resumed run trains on
// with it, without profiling again.
TEST(MergeCompTraining, AResumeAfterPlanningKeepsThePlan) {
  const auto dir = scratch_dir("plan");
  auto c = mergecomp_run("topk:ratio=0.1,select=tensor");
  c.checkpoint_dir = dir.string();
  c.stop_after_steps = 4;
  const auto first = train_on(2, c);
  ASSERT_TRUE(first[0].plan.has_value());
  c.resume = true;
  c.stop_after_steps = 0;
  const auto resumed = train_on(2, c);
  EXPECT_FALSE(resumed[0].plan.has_value()) << "planned again after resuming";
  EXPECT_EQ(resumed[0].bucket_policy, first[0].bucket_policy);
  auto by_hand = short_run("topk:ratio=0.1,select=tensor");
  by_hand.max_steps_per_epoch = 6;
  by_hand.buckets = first[0].bucket_policy;
  EXPECT_TRUE(bitwise_equal(resumed[0].final_parameters, train_on(2, by_hand)[0].final_parameters));
  std::filesystem::remove_all(dir);
}

TEST(MergeCompTraining, BadBucketSettingsAreRefusedNamingThem) {
  auto c = short_run("fp32");
  c.buckets = "greedy";
  EXPECT_THROW(validate(c), InvalidArgument);
  c.buckets = "groups:2,x";
  EXPECT_THROW(validate(c), InvalidArgument);
  c.buckets = "mergecomp";
  c.plan_steps = 1;
  EXPECT_THROW(validate(c), InvalidArgument);
  c.plan_steps = 3;
  c.plan_alpha = 1;
  EXPECT_THROW(validate(c), InvalidArgument);
  auto wrong = short_run("fp32");
  wrong.buckets = "groups:1,1";
  const auto message = test_support::train_fails_on_every_rank<InvalidArgument>(2, wrong);
  EXPECT_NE(message.find("make 2 tensors, but the model has 6"), std::string::npos) << message;
}

}  // namespace
}  // namespace qccl::engines
