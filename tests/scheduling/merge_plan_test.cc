// MergeComp's model partition (MergeComp §4.3): the step-time model of Eq. 7
// checked on hand-computed timelines, the searches (Theorem 3's, Algorithm 2,
// Lemma 1's exhaustive one) checked against brute force on random profiles,
// and the refusals.
//
// Every time and cost here is a multiple of 1/1024 with few bits (elements
// are integers, per-element costs k/1024), so the simulation's arithmetic is
// exact and predicted times can be compared with ==, ties included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "qccl/common/errors.h"
#include "qccl/scheduling/merge_plan.h"

namespace qccl::test {
namespace {

// Three tensors whose gradients are ready at 1, 3 and 6 s; backward returns
// at 7 s; h + g = 3 + 3/64 per element; the optimizer takes 1/128 s per
// element; 0.5 s of data loading.
StepProfile three_tensor_profile(bool overlap_updates) {
  StepProfile p;
  p.elements = {64, 128, 256};
  p.ready = {1, 3, 6};
  p.backward_end = 7;
  p.optimizer_per_element = 1.0 / 128;
  p.overlap_updates = overlap_updates;
  p.other = 0.5;
  return p;
}

GroupCosts costs_of(double fixed_h, double per_h, double fixed_g, double per_g) {
  return {{fixed_h, per_h}, {fixed_g, per_g}};
}

const GroupCosts kThreeTensorCosts = costs_of(1, 1.0 / 64, 2, 2.0 / 64);

TEST(MergePlanTest, OneGroupWaitsForTheLastGradient) {
  // Ready at 6, 3 + 448·3/64 = 24 s of codec and transfer: done at 30; the
  // 448 elements' update (3.5 s) follows, then the other 0.5 s.
  for (const bool overlap : {false, true}) {
    EXPECT_EQ(predict_step_seconds(three_tensor_profile(overlap), kThreeTensorCosts, {3}), 34.0);
  }
}

TEST(MergePlanTest, GroupsOverlapCommunicationWithBackward) {
  // {1, 2}: group 0 (64 elements, ready at 1) ends at 1 + 3 + 3 = 7; group 1
  // (384, ready at 6) starts at max(6, 7) = 7 and ends at 7 + 3 + 18 = 28.
  // Overlapped updates: u0 = max(7, 7) + 0.5 = 7.5, u1 = max(7.5, 28) + 3 = 31.
  EXPECT_EQ(predict_step_seconds(three_tensor_profile(true), kThreeTensorCosts, {1, 2}), 31.5);
  // Without: max(7, 28) + 3.5.
  EXPECT_EQ(predict_step_seconds(three_tensor_profile(false), kThreeTensorCosts, {1, 2}), 32.0);
  // {1, 1, 1}: ends 7, max(3, 7) + 3 + 6 = 16, max(6, 16) + 3 + 12 = 31.
  // Overlapped: 7.5, max(7.5, 16) + 1 = 17, max(17, 31) + 2 = 33.
  EXPECT_EQ(predict_step_seconds(three_tensor_profile(true), kThreeTensorCosts, {1, 1, 1}), 33.5);
  EXPECT_EQ(predict_step_seconds(three_tensor_profile(false), kThreeTensorCosts, {1, 1, 1}), 35.0);
}

TEST(MergePlanTest, AGroupIsReadyWhenItsLatestTensorIs) {
  StepProfile p = three_tensor_profile(false);
  p.ready = {5, 1, 2};  // measured order need not be monotone
  // {2, 1}: group 0 ready at max(5, 1) = 5, ends 5 + 3 + 9 = 17; group 1
  // (ready at 2) waits for it: 17 + 3 + 12 = 32; then 3.5 + 0.5.
  EXPECT_EQ(predict_step_seconds(p, kThreeTensorCosts, {2, 1}), 36.0);
  // {1, 2}: ends 5 + 3 + 3 = 11, then max(2, 11) + 3 + 18 = 32.
  EXPECT_EQ(predict_step_seconds(p, kThreeTensorCosts, {1, 2}), 36.0);
}

TEST(MergePlanTest, BackwardAndOtherTimeBoundTheStep) {
  StepProfile p = three_tensor_profile(false);
  p.backward_end = 40;  // communication is long done: 40 + 3.5 + 0.5
  EXPECT_EQ(predict_step_seconds(p, kThreeTensorCosts, {1, 1, 1}), 44.0);
  p.other = 10;
  EXPECT_EQ(predict_step_seconds(p, kThreeTensorCosts, {1, 1, 1}), 53.5);
  p.overlap_updates = true;  // the updates start at 40: 40 + 0.5 + 1 + 2 + 10
  EXPECT_EQ(predict_step_seconds(p, kThreeTensorCosts, {1, 1, 1}), 53.5);
}

// ---------------------------------------------------------------------------
// Searches against brute force.

// Every partition of n tensors into contiguous groups (Lemma 1's 2^(n−1)).
std::vector<GroupSizes> all_partitions(std::size_t n) {
  std::vector<GroupSizes> partitions;
  for (std::uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    GroupSizes groups{1};
    for (std::size_t t = 1; t < n; ++t) {
      if (cuts >> (t - 1) & 1u) groups.push_back(1); else ++groups.back();
    }
    partitions.push_back(groups);
  }
  return partitions;
}

double best_seconds_with(const StepProfile& p, const GroupCosts& costs, std::size_t groups) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& partition : all_partitions(p.elements.size())) {
    if (groups == 0 || partition.size() == groups) {
      best = std::min(best, predict_step_seconds(p, costs, partition));
    }
  }
  return best;
}

struct RandomCase {
  StepProfile profile;
  GroupCosts costs;
};

// Random but exact: integer elements and ready times, costs in 1/1024 s.
// Ready times are nondecreasing (backward produces gradients in order).
RandomCase random_case(std::uint64_t seed, std::size_t tensors, bool overlap, bool free_optimizer) {
  std::mt19937_64 rng(seed);
  const auto integer = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  RandomCase c;
  double ready = 0;
  for (std::size_t t = 0; t < tensors; ++t) {
    c.profile.elements.push_back(static_cast<std::size_t>(integer(1, 4000)));
    ready += integer(0, 30);
    c.profile.ready.push_back(ready);
  }
  c.profile.backward_end = ready + integer(0, 20);
  c.profile.optimizer_per_element = free_optimizer ? 0 : integer(0, 16) / 1024.0;
  c.profile.overlap_updates = overlap;
  c.profile.other = integer(0, 10);
  c.costs = costs_of(integer(0, 20), integer(0, 32) / 1024.0,  // h
                     integer(0, 20), integer(1, 32) / 1024.0);  // g
  return c;
}

TEST(MergePlanTest, ScanFindsTheBestPartitionOfEachSize) {
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    const std::size_t n = 1 + seed % 10;
    const RandomCase c = random_case(seed, n, seed % 2 == 0, seed % 3 == 0);
    for (std::size_t y = 1; y <= n; ++y) {
      const GroupSizes groups = best_partition(c.profile, c.costs, y, LastCutSearch::scan);
      ASSERT_EQ(groups.size(), y);
      EXPECT_EQ(predict_step_seconds(c.profile, c.costs, groups),
                best_seconds_with(c.profile, c.costs, y))
          << "seed " << seed << ", " << y << " groups";
    }
  }
}

TEST(MergePlanTest, ExhaustiveSearchFindsTheBestOfAllPartitions) {
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const std::size_t n = 1 + seed % 12;
    const RandomCase c = random_case(seed, n, seed % 2 == 1, false);
    const GroupSizes groups = exhaustive_best_partition(c.profile, c.costs);
    EXPECT_EQ(predict_step_seconds(c.profile, c.costs, groups),
              best_seconds_with(c.profile, c.costs, 0))
        << "seed " << seed;
  }
}

// With Y = N and α = 0, Algorithm 2 stops only when one group more makes the
// step slower; on these profiles F_min(y) falls, then rises, so it stops at
// the global optimum.
TEST(MergePlanTest, AlgorithmTwoWithoutThresholdReachesTheGlobalOptimum) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const std::size_t n = 1 + seed % 12;
    const RandomCase c = random_case(seed, n, seed % 2 == 0, seed % 5 == 0);
    const MergeCompOptions every_size{.max_groups = n, .alpha = 0, .search = LastCutSearch::scan};
    const MergeCompChoice choice = mergecomp_search(c.profile, c.costs, every_size);
    const double optimum =
        predict_step_seconds(c.profile, c.costs, exhaustive_best_partition(c.profile, c.costs));
    EXPECT_EQ(choice.predicted, optimum) << "seed " << seed;
    EXPECT_EQ(predict_step_seconds(c.profile, c.costs, choice.groups), choice.predicted);
  }
}

// Theorem 3's setting (no optimizer overlap, or a free optimizer): F is
// nonincreasing and then nondecreasing in the last cut, so bisection finds
// the best last cut; for y = 2 that is the best partition.
TEST(MergePlanTest, BinarySearchIsExactInTheoremThreesSetting) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const std::size_t n = 2 + seed % 11;
    const bool overlap = seed % 2 == 0;
    const RandomCase c = random_case(seed, n, overlap, /*free_optimizer=*/overlap);
    const GroupSizes two = best_partition(c.profile, c.costs, 2, LastCutSearch::binary);
    EXPECT_EQ(predict_step_seconds(c.profile, c.costs, two),
              best_seconds_with(c.profile, c.costs, 2))
        << "seed " << seed;
    for (std::size_t y = 3; y <= std::min<std::size_t>(n, 4); ++y) {
      EXPECT_EQ(predict_step_seconds(c.profile, c.costs, best_partition(c.profile, c.costs, y)),
                best_seconds_with(c.profile, c.costs, y))
          << "seed " << seed << ", " << y << " groups";
    }
  }
}

// With overlapped updates and a costly optimizer F can have two local
// minima in the cut, and bisection settles in one of them: that is why
// `scan` exists. Here h = 4 + x, g = 0, the optimizer 1 s per element.
// Cutting after tensor 2 (9 elements, ready at 13) the first group ends at
// 26; moving the one-element tensor 2 into it (c = 3) makes it wait for
// ready time 20 and delays everything after it; moving tensor 3 as well
// (c = 4) costs no more waiting and takes 4 elements off the last group's
// update, which runs after the last transfer.
TEST(MergePlanTest, BinarySearchCanMissWhenTheStepTimeIsNotUnimodal) {
  StepProfile p;
  p.elements = {8, 1, 1, 4, 2, 7, 6};
  p.ready = {8, 13, 20, 20, 25, 28, 29};
  p.backward_end = 33;
  p.optimizer_per_element = 1;
  p.overlap_updates = true;
  const GroupCosts costs = costs_of(4, 1, 0, 0);
  std::vector<double> by_cut;
  for (std::size_t c = 1; c < 7; ++c) by_cut.push_back(predict_step_seconds(p, costs, {c, 7 - c}));
  // c = 2: group 0 ends 13 + 4 + 9 = 26, group 1 (20 elements) at 29 + 24 = 53;
  // updates end max(33, 26) + 9 = 42, then max(42, 53) + 20 = 73.
  // c = 4: 20 + 4 + 14 = 38, 38 + 19 = 57; max(33, 38) + 14 = 52, 57 + 15 = 72.
  EXPECT_EQ(by_cut, (std::vector<double>{75, 73, 76, 72, 75, 84}));
  // Bisection's two candidates: the turning point, c = 3 (group 0's end,
  // 20 + 4 + 10 = 34, first reaches group 1's ready time, 29), with c = 2
  // beside it; and the first c with F(c) <= F(c + 1), 2. Both miss c = 4.
  EXPECT_EQ(best_partition(p, costs, 2, LastCutSearch::binary), (GroupSizes{2, 5}));
  EXPECT_EQ(best_partition(p, costs, 2, LastCutSearch::scan), (GroupSizes{4, 3}));
}

// ---------------------------------------------------------------------------
// Algorithm 2's stopping rules.

// Three tensors of 64 elements ready at 0, 10 and 14 s; h + g = B + x/64.
StepProfile stopping_profile() {
  StepProfile p;
  p.elements = {64, 64, 64};
  p.ready = {0, 10, 14};
  p.backward_end = 14;
  p.overlap_updates = false;
  return p;
}

TEST(MergePlanTest, AlgorithmTwoKeepsOneGroupWhenTwoAreSlower) {
  StepProfile p = stopping_profile();
  p.ready = {0, 0, 0};
  p.backward_end = 0;
  const GroupCosts costs = costs_of(6, 1.0 / 64, 0, 0);
  // F_min(1) = 6 + 3 = 9; any two groups pay B twice and overlap nothing: 15.
  const auto choice = mergecomp_search(p, costs, {.max_groups = 3, .alpha = 0});
  EXPECT_EQ(choice.groups, (GroupSizes{3}));
  EXPECT_EQ(choice.predicted, 9.0);
  EXPECT_EQ(choice.best_by_groups, (std::vector<double>{9, 15}));  // y = 3 never searched
}

TEST(MergePlanTest, AlgorithmTwoStopsWhenAGroupMoreIsSlower) {
  const GroupCosts costs = costs_of(6, 1.0 / 64, 0, 0);
  // F_min(1) = 14 + 6 + 3 = 23. y = 2: {1, 2} ends 7, then 14 + 6 + 2 = 22
  // ({2, 1}: 18, then 25). y = 3: 7, 10 + 7 = 17, 17 + 7 = 24.
  const auto choice = mergecomp_search(stopping_profile(), costs, {.max_groups = 3, .alpha = 0});
  EXPECT_EQ(choice.groups, (GroupSizes{1, 2}));
  EXPECT_EQ(choice.predicted, 22.0);
  EXPECT_EQ(choice.best_by_groups, (std::vector<double>{23, 22, 24}));
}

TEST(MergePlanTest, AlgorithmTwoStopsWhenTheGainIsBelowAlpha) {
  const GroupCosts costs = costs_of(1, 1.0 / 64, 0, 0);
  StepProfile p = stopping_profile();
  p.ready = {0, 10, 20};
  p.backward_end = 20;
  // F_min(1) = 20 + 1 + 3 = 24; y = 2: {2, 1} ends 13, then 20 + 2 = 22;
  // y = 3: 2, 12, 22. A gain of 2/24 ≈ 8.3 %:
  const auto stopped = mergecomp_search(p, costs, {.max_groups = 3, .alpha = 0.1});
  EXPECT_EQ(stopped.groups, (GroupSizes{2, 1}));  // gained < 10 %: X*_2, y = 3 not searched
  EXPECT_EQ(stopped.best_by_groups, (std::vector<double>{24, 22}));
  // Above 5 %, y = 3 is tried; it gains nothing (< 5 % of 22): X*_3 is kept.
  const auto further = mergecomp_search(p, costs, {.max_groups = 3, .alpha = 0.05});
  EXPECT_EQ(further.groups, (GroupSizes{1, 1, 1}));
  EXPECT_EQ(further.predicted, 22.0);
  EXPECT_EQ(further.best_by_groups, (std::vector<double>{24, 22, 22}));
  // Y = 1 (or Y capped at N = 1): the single group, no search.
  const auto one = mergecomp_search(p, costs, {.max_groups = 1});
  EXPECT_EQ(one.groups, (GroupSizes{3}));
  EXPECT_EQ(one.best_by_groups, (std::vector<double>{24}));
}

TEST(MergePlanTest, MaxGroupsIsCappedAtTheTensorCount) {
  const GroupCosts costs = costs_of(0, 1.0 / 64, 0, 0);
  const auto choice = mergecomp_search(stopping_profile(), costs, {.max_groups = 50, .alpha = 0});
  EXPECT_LE(choice.best_by_groups.size(), 3u);
  EXPECT_EQ(best_partition(stopping_profile(), kThreeTensorCosts, 1), (GroupSizes{3}));
  EXPECT_EQ(best_partition(stopping_profile(), kThreeTensorCosts, 3), (GroupSizes{1, 1, 1}));
}

// ---------------------------------------------------------------------------
// Refusals.

TEST(MergePlanTest, RefusesInvalidProfiles) {
  const auto refused = [](const StepProfile& p) {
    EXPECT_THROW(validate(p), InvalidArgument);
    EXPECT_THROW(predict_step_seconds(p, kThreeTensorCosts, {p.elements.size()}), InvalidArgument);
    EXPECT_THROW(mergecomp_search(p, kThreeTensorCosts), InvalidArgument);
  };
  StepProfile empty;
  refused(empty);
  StepProfile p = three_tensor_profile(true);
  EXPECT_NO_THROW(validate(p));
  p.ready.pop_back();
  refused(p);
  p = three_tensor_profile(true);
  p.ready[1] = -1;
  refused(p);
  p = three_tensor_profile(true);
  p.backward_end = std::numeric_limits<double>::quiet_NaN();
  refused(p);
  p = three_tensor_profile(true);
  p.optimizer_per_element = std::numeric_limits<double>::infinity();
  refused(p);
  p = three_tensor_profile(true);
  p.other = -0.5;
  refused(p);
  EXPECT_THAT([] { validate(StepProfile{{1, 2}, {0}, 0, 0, true, 0}); },
              testing::ThrowsMessage<InvalidArgument>(
                  testing::HasSubstr("1 ready times for 2 tensors")));
}

TEST(MergePlanTest, RefusesGroupsThatDoNotCoverTheTensors) {
  const StepProfile p = three_tensor_profile(true);
  EXPECT_THAT([&] { predict_step_seconds(p, kThreeTensorCosts, {1, 1}); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("profile has 3")));
  EXPECT_THROW(predict_step_seconds(p, kThreeTensorCosts, {2, 2}), InvalidArgument);
  EXPECT_THROW(predict_step_seconds(p, kThreeTensorCosts, {3, 0}), InvalidArgument);
  EXPECT_THROW(predict_step_seconds(p, kThreeTensorCosts, {}), InvalidArgument);
}

TEST(MergePlanTest, RefusesBadSearchParameters) {
  const StepProfile p = three_tensor_profile(true);
  EXPECT_THROW(mergecomp_search(p, kThreeTensorCosts, {.max_groups = 0}), InvalidArgument);
  for (const double alpha : {-0.01, 1.0, 2.0, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(mergecomp_search(p, kThreeTensorCosts, {.alpha = alpha}), InvalidArgument)
        << alpha;
  }
  EXPECT_THROW(best_partition(p, kThreeTensorCosts, 0), InvalidArgument);
  EXPECT_THAT([&] { best_partition(p, kThreeTensorCosts, 4); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("ask for 1 to 3")));
  EXPECT_THROW(predict_step_seconds(p, costs_of(-1, 0, 0, 0), {3}), InvalidArgument);
  EXPECT_THROW(best_partition(p, costs_of(0, 0, 0, std::nan("")), 2), InvalidArgument);
}

TEST(MergePlanTest, RefusesSearchesTooLargeToRun) {
  StepProfile p;
  p.elements.assign(200, 1000);
  for (std::size_t t = 0; t < 200; ++t) p.ready.push_back(static_cast<double>(t));
  p.backward_end = 200;
  // Binary: C(198, y − 2)·21 partitions for y groups; up to y = 5 it is 27
  // million in all, y = 6 adds 1.3 billion.
  EXPECT_THAT([&] { mergecomp_search(p, kThreeTensorCosts, {.max_groups = 6}); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("use at most 5 groups")));
  EXPECT_THROW(best_partition(p, kThreeTensorCosts, 8, LastCutSearch::scan), InvalidArgument);
  p.elements.resize(25);
  p.ready.resize(25);
  EXPECT_THAT([&] { exhaustive_best_partition(p, kThreeTensorCosts); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("at most 24 tensors")));
}

}  // namespace
}  // namespace qccl::test
