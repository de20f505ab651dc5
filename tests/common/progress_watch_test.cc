// The progress watch: what a rank is doing is known when an exception
// leaves it, and a rank stuck in one activity ends the process, naming it.
#include <gtest/gtest.h>

#include <chrono>
#include <new>
#include <thread>

#include "qccl/common/progress_watch.h"

namespace qccl {
namespace {

using namespace std::chrono_literals;

TEST(ProgressWatch, NamesTheActivityAnExceptionLeftAndRestoresTheEnclosingOne) {
  ProgressWatch watch(3, 2, Timeout(60000), 1);
  EXPECT_EQ(watch.activity(3), "");
  {
    const ProgressWatch::Scope outer(&watch, 3, "building the model");
    EXPECT_EQ(watch.activity(3), "building the model");
    {
      const ProgressWatch::Scope inner(&watch, 3, "forward and backward", 12);
      EXPECT_EQ(watch.activity(3), "step 12: forward and backward");
    }
    EXPECT_EQ(watch.activity(3), "building the model");
  }
  EXPECT_EQ(watch.activity(3), "");
  // The innermost scope an exception leaves is where it began.
  try {
    const ProgressWatch::Scope outer(&watch, 4, "step loop");
    const ProgressWatch::Scope inner(&watch, 4, "the optimizer", 7);
    throw std::bad_alloc();
  } catch (const std::bad_alloc&) {
    EXPECT_EQ(watch.activity(4), "step 7: the optimizer");
  }
  // The next activity clears it; ranks outside the watch and a null watch
  // are ignored.
  { const ProgressWatch::Scope next(&watch, 4, "evaluating"); }
  EXPECT_EQ(watch.activity(4), "");
  { const ProgressWatch::Scope elsewhere(&watch, 9, "x"); }
  { const ProgressWatch::Scope none(nullptr, 0, "x"); }
  EXPECT_EQ(watch.activity(9), "");
}

TEST(ProgressWatch, ActivitiesThatFinishInTimeNeverEndTheProcess) {
  ProgressWatch watch(0, 1, Timeout(200), 1);
  for (int i = 0; i < 50; ++i) {
    const ProgressWatch::Scope busy(&watch, 0, "a short step", i);
    std::this_thread::sleep_for(5ms);
  }
  // Idle time (no scope) is never a stall either.
  std::this_thread::sleep_for(600ms);
}

// Waits on peers stop the clock: an activity that spends longer than the
// bound waiting, in a wait nested in another, computes only briefly (the
// watch would end the process otherwise).
TEST(ProgressWatch, WaitsOnPeersDoNotCountAsComputation) {
  ProgressWatch watch(0, 1, Timeout(100), 1);
  const ProgressWatch::Scope busy(&watch, 0, "a step with a long exchange", 1);
  {
    const ProgressWatch::Wait waiting;
    const ProgressWatch::Wait nested;
    std::this_thread::sleep_for(400ms);
  }
  std::this_thread::sleep_for(20ms);
}

void stay_busy_past_the_bound() {
  ProgressWatch watch(0, 2, Timeout(100), 3);
  const ProgressWatch::Scope busy(&watch, 1, "forward and backward", 5);
  std::this_thread::sleep_for(10s);  // the watch ends the process first
}

TEST(ProgressWatchDeathTest, ARankStuckInOneActivityEndsTheProcessNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(stay_busy_past_the_bound(), ::testing::ExitedWithCode(3),
              "rank 1 has been computing in step 5: forward and backward for [0-9]+ ms, more "
              "than --timeout 100 ms, without finishing. Memory may have run out");
}

}  // namespace
}  // namespace qccl
