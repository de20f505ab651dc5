// Bucketing (DDP's size-capped rule) in closed form, and the bucket reducer:
// in-order launching whatever order ranks mark buckets ready in, exact
// results identical on every rank, failure and timeout reporting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>

#include "../support/collective_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/scheduling/bucket_plan.h"
#include "qccl/scheduling/bucket_reducer.h"

namespace qccl::test {
namespace {

TEST(BucketPlanTest, SizeCappedPolicyPacksInReverseOrder) {
  // fp32 sizes: 400 B, 1.2 MB, 200 B, 28 MB, 40 B; first cap 1 MiB, cap 25 MiB.
  const std::vector<std::size_t> elements{100, 300000, 50, 7000000, 10};
  const SizeCappedPolicy policy;
  const auto plan = policy.plan(elements);
  ASSERT_EQ(plan.bucket_count(), 3u);
  EXPECT_EQ(plan.buckets[0], (std::vector<std::size_t>{4}));        // the first, small bucket
  EXPECT_EQ(plan.buckets[1], (std::vector<std::size_t>{3}));        // over the cap: alone
  EXPECT_EQ(plan.buckets[2], (std::vector<std::size_t>{2, 1, 0}));  // the rest fits 25 MiB
  EXPECT_EQ(plan.bucket_elements, (std::vector<std::size_t>{10, 7000000, 300150}));
  EXPECT_EQ(plan.places[1].bucket, 2u);
  EXPECT_EQ(plan.places[1].offset, 50u);
  EXPECT_EQ(plan.places[0].offset, 300050u);
  EXPECT_EQ(plan.fingerprint(), policy.plan(elements).fingerprint());
  const std::vector<std::size_t> other{100, 300000, 50, 7000000, 11};
  EXPECT_NE(plan.fingerprint(), policy.plan(other).fingerprint());
  // Caps at their smallest: one tensor per bucket.
  const auto tiny = SizeCappedPolicy(4, 4).plan(elements);
  EXPECT_EQ(tiny.bucket_count(), elements.size());
  EXPECT_THROW(SizeCappedPolicy(2, 4), InvalidArgument);
  EXPECT_EQ(policy.plan({}).bucket_count(), 0u);
}

TEST(BucketPlanTest, GroupsAreContiguousInReverseRegistrationOrder) {
  const std::vector<std::size_t> elements{100, 300000, 50, 7000000, 10, 7, 9, 1};
  const auto plan = GroupsPolicy({3, 5}).plan(elements);
  ASSERT_EQ(plan.bucket_count(), 2u);
  EXPECT_EQ(plan.buckets[0], (std::vector<std::size_t>{7, 6, 5}));
  EXPECT_EQ(plan.buckets[1], (std::vector<std::size_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(plan.bucket_elements, (std::vector<std::size_t>{17, 7300160}));
  EXPECT_EQ(plan.places[6].bucket, 0u);
  EXPECT_EQ(plan.places[6].offset, 1u);
  EXPECT_EQ(plan.places[0].offset, 7300060u);
  EXPECT_EQ(group_sizes_of(plan), (GroupSizes{3, 5}));
  EXPECT_EQ(GroupsPolicy({3, 5}).name(), "groups:3,5");

  EXPECT_EQ(group_sizes_of(LayerwisePolicy().plan(elements)), GroupSizes(8, 1));
  EXPECT_EQ(group_sizes_of(SingleBucketPolicy().plan(elements)), (GroupSizes{8}));
  // DDP's rule makes contiguous groups too: the same plan as its sizes.
  const auto ddp = SizeCappedPolicy(1 << 20, 64).plan(elements);
  const auto sizes = group_sizes_of(ddp);
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(plan_of_groups(sizes, elements).fingerprint(), ddp.fingerprint());
  // A plan that is not contiguous in that order has no group sizes.
  BucketPlan shuffled = plan;
  std::swap(shuffled.buckets[0][0], shuffled.buckets[1][0]);
  EXPECT_TRUE(group_sizes_of(shuffled).empty());
}

TEST(BucketPlanTest, GroupSizesThatDoNotFitTheModelAreRefusedNamingBoth) {
  const std::vector<std::size_t> elements{4, 4, 4};
  try {
    GroupsPolicy({1, 1}).plan(elements);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("make 2 tensors, but the model has 3"));
  }
  EXPECT_THROW(GroupsPolicy({}), InvalidArgument);
  EXPECT_THROW(GroupsPolicy({2, 0, 1}), InvalidArgument);
  EXPECT_EQ(parse_group_sizes("3,40,1"), (GroupSizes{3, 40, 1}));
  EXPECT_EQ(format_group_sizes({3, 40, 1}), "3,40,1");
  for (const char* bad : {"", "3,", ",3", "3,x", "0", "-1", "3;4", "2,,1"}) {
    EXPECT_THROW(parse_group_sizes(bad), InvalidArgument) << "'" << bad << "'";
  }
}

// Each rank marks its buckets ready in its own order, from another thread,
// with pauses; the reducer still launches them 0, 1, 2, ... everywhere.
TEST(BucketReducerTest, InOrderLaunchGivesExactIdenticalResults) {
  constexpr int n = 3;
  const std::vector<std::size_t> sizes{1000, 1, 0, 25000, 333};
  run_world(n, [&](Communicator& comm) {
    std::vector<std::unique_ptr<Codec>> codecs;
    std::vector<std::vector<float>> data;
    std::vector<BucketWork> work;
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      codecs.push_back(make_codec("fp32", {.seed = 1, .bucket = b}));
      data.push_back(make_vector(sizes[b], [&](std::size_t i) { return pattern(comm.rank(), i + b); }));
    }
    for (std::size_t b = 0; b < sizes.size(); ++b) work.push_back({codecs[b].get(), data[b]});
    BucketReducer reducer(comm);
    for (int step = 0; step < 3; ++step) {
      reducer.begin(work);
      std::vector<std::size_t> order(sizes.size());
      for (std::size_t b = 0; b < order.size(); ++b) order[b] = b;
      std::rotate(order.begin(), order.begin() + (comm.rank() + step) % order.size(), order.end());
      std::thread marker([&] {
        for (std::size_t b : order) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          reducer.ready(b);
        }
      });
      marker.join();
      reducer.finish(kTestTimeout);
      // Whatever order they were marked ready in, the buckets ran one after
      // another in index order.
      const auto spans = reducer.spans();
      ASSERT_EQ(spans.size(), sizes.size());
      for (std::size_t b = 0; b < spans.size(); ++b) {
        EXPECT_NE(spans[b].start, Clock::time_point{}) << "bucket " << b;
        EXPECT_LE(spans[b].start, spans[b].end) << "bucket " << b;
        if (b > 0) {
          EXPECT_LE(spans[b - 1].end, spans[b].start) << "bucket " << b;
        }
      }
      EXPECT_EQ(reducer.minor_faults().size(), sizes.size());
      for (std::size_t b = 0; b < sizes.size(); ++b) {
        auto expected = make_vector(sizes[b], [&](std::size_t i) { return pattern_sum(n, i + b); });
        for (std::size_t i = 0; i < sizes[b]; ++i) {
          ASSERT_FLOAT_EQ(data[b][i], expected[i] / n) << "bucket " << b << " element " << i;
        }
        expect_identical_across_ranks(comm, data[b]);
        // In place: `work` points into these buffers.
        const auto fresh = make_vector(sizes[b], [&](std::size_t i) { return pattern(comm.rank(), i + b); });
        std::copy(fresh.begin(), fresh.end(), data[b].begin());
      }
    }
  });
}

TEST(BucketReducerTest, AFailureIsRethrownAndLaterBucketsAreSkipped) {
  const auto message = expect_throw_on_every_rank<InvalidArgument>(2, [&](Communicator& comm) {
    auto a = make_codec("fp32", {.bucket = 0});
    auto b = make_codec("fp32", {.bucket = 1});
    auto c = make_codec("fp32", {.bucket = 2});
    std::vector<float> x(10, 1.0f), y(10, comm.rank() == 1 ? std::nanf("") : 1.0f), z(10, 1.0f);
    BucketReducer reducer(comm);
    reducer.begin({{a.get(), x}, {b.get(), y}, {c.get(), z}});
    for (std::size_t k = 0; k < 3; ++k) reducer.ready(k);
    try {
      reducer.finish(kTestTimeout);
    } catch (const InvalidArgument&) {
      EXPECT_EQ(z, std::vector<float>(10, 1.0f));  // skipped, untouched
      // Bucket 0 went through; bucket 2's handle fails, naming why.
      EXPECT_TRUE(reducer.work(0).test());
      EXPECT_EQ(reducer.failed_bucket(), std::optional<std::size_t>(1));
      EXPECT_THAT([&] { reducer.work(2).test(); },
                  ::testing::ThrowsMessage<CommError>(::testing::HasSubstr(
                      "bucket 2 not reduced: bucket 1 failed earlier in this step")));
      throw;
    }
  });
  EXPECT_THAT(message, ::testing::HasSubstr("NaN or Inf in the input of rank(s) 1"));
}

// Per-bucket completion: each bucket's on_done runs on the stream's thread
// (never on the thread that marked it ready) once that bucket is reduced,
// in index order, and sees the bucket's mean; work(b) is its handle.
TEST(BucketReducerTest, EachBucketCompletesOnItsOwnWithItsCallback) {
  constexpr int n = 3;
  const std::vector<std::size_t> sizes{7, 0, 1000, 1};
  run_world(n, [&](Communicator& comm) {
    std::vector<std::unique_ptr<Codec>> codecs;
    std::vector<std::vector<float>> data;
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      codecs.push_back(make_codec("fp32", {.bucket = b}));
      data.emplace_back(sizes[b], static_cast<float>(comm.rank() + 1));
    }
    std::mutex mutex;
    std::vector<std::size_t> completed;
    std::vector<std::thread::id> threads;
    std::vector<BucketWork> work;
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      work.emplace_back(codecs[b].get(), data[b], [&, b](const Work& done) {
        EXPECT_TRUE(done.completed());
        EXPECT_EQ(done.exception(), nullptr);
        for (float v : data[b]) EXPECT_EQ(v, 2.0f);  // mean of 1, 2, 3
        std::lock_guard lock(mutex);
        completed.push_back(b);
        threads.push_back(std::this_thread::get_id());
      });
    }
    BucketReducer reducer(comm);
    for (int step = 0; step < 2; ++step) {
      for (auto& bucket : data) std::fill(bucket.begin(), bucket.end(), comm.rank() + 1.0f);
      completed.clear();
      threads.clear();
      reducer.begin(work);
      EXPECT_FALSE(reducer.work(0).valid());  // not launched yet
      for (std::size_t b = sizes.size(); b-- > 0;) reducer.ready(b);  // last first
      reducer.work(2).wait(kTestTimeout);  // one bucket, before the step ends
      EXPECT_EQ(data[2], std::vector<float>(1000, 2.0f));
      reducer.finish(kTestTimeout);
      EXPECT_EQ(completed, (std::vector<std::size_t>{0, 1, 2, 3}));
      for (const auto id : threads) {
        EXPECT_NE(id, std::this_thread::get_id());
        EXPECT_EQ(id, threads.front());  // the stream's one thread
      }
    }
  });
}

TEST(BucketReducerTest, ABucketNeverMarkedReadyTimesOutByName) {
  run_world(2, [&](Communicator& comm) {
    auto a = make_codec("fp32");
    auto b = make_codec("fp32");
    std::vector<float> x(4, 1.0f), y(4, 1.0f);
    BucketReducer reducer(comm);
    reducer.begin({{a.get(), x}, {b.get(), y}});
    reducer.ready(1);  // bucket 0 never: nothing may launch
    EXPECT_THAT([&] { reducer.finish(std::chrono::milliseconds(100)); },
                ::testing::ThrowsMessage<TimeoutError>(
                    ::testing::HasSubstr("bucket 0 of 2 not reduced after 100 ms (it was never "
                                         "marked ready)")));
    EXPECT_EQ(x, std::vector<float>(4, 1.0f));
    EXPECT_THROW(reducer.ready(1), InvalidArgument);   // twice
    EXPECT_THROW(reducer.ready(7), InvalidArgument);   // unknown
    EXPECT_THROW(reducer.begin({}), InvalidArgument);  // a step is still running
  });
}

}  // namespace
}  // namespace qccl::test
