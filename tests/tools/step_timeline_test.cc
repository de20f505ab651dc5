// `qccl bench timeline`: medians of each bucket's exchange and update over
// a training log's steps (those after its MergeComp plan, if it has one),
// the step's tail after the last exchange, the share of time some exchange
// was running, and clear refusals of logs it cannot read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "qccl/common/errors.h"
#include "qccl/tools/step_timeline.h"

namespace qccl::tools {
namespace {

std::string write_log(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("qccl-timeline-" + name + "-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << text;
  return path.string();
}

// A step line with two buckets; every time a multiple of 1/8 s, exact in
// binary, so medians (the mean of the middle two for an even count) are
// exact too.
std::string step_line(int step, double shift) {
  std::ostringstream line;
  line << R"({"event":"step","step":)" << step << R"(,"seconds":)" << 1.0 + shift
       << R"(,"compute":0.125,"skipped":false,"exchanges":[[0.125,)" << 0.25 + shift << "],["
       << 0.5 + shift << "," << 0.75 + shift << R"(]],"updates":[[)" << 0.375 + shift << ","
       << 0.5 + shift << "],[" << 0.75 + shift << "," << 0.875 + shift << "]]}\n";
  return line.str();
}

// A step line of 1 s with the given timeline fields.
std::string step_with(const std::string& timeline) {
  return R"({"event":"step","step":1,"seconds":1,"compute":0.5,)" + timeline + "}\n";
}

TEST(StepTimeline, MediansPerBucketLeaveOutTheFirstAndSkippedSteps) {
  const auto path = write_log(
      "medians", R"({"event":"start"})"
                 "\n" +
                     step_line(0, 4.0) +  // warm-up, left out by skip = 1
                     step_line(1, 0.0) + step_line(2, 0.125) +
                     R"({"event":"step","skipped":true,"seconds":9})"
                     "\n" +
                     R"({"event":"epoch","epoch":0})"
                     "\n");
  const auto t = read_step_timeline(path, 1);
  EXPECT_EQ(t.steps, 2u);
  EXPECT_EQ(t.skipped, 1u);
  EXPECT_FALSE(t.plan_after_step);
  EXPECT_EQ(t.step_seconds, 1.0625);
  EXPECT_EQ(t.compute_seconds, 0.125);
  ASSERT_EQ(t.buckets.size(), 2u);
  EXPECT_EQ(t.buckets[0].exchange_start, 0.125);
  EXPECT_EQ(t.buckets[0].exchange_end, 0.3125);
  EXPECT_EQ(t.buckets[0].exchange_seconds, 0.1875);
  EXPECT_TRUE(t.has_updates);
  EXPECT_EQ(t.buckets[0].update_start, 0.4375);
  EXPECT_EQ(t.buckets[1].exchange_start, 0.5625);
  EXPECT_EQ(t.buckets[1].exchange_seconds, 0.25);
  EXPECT_EQ(t.buckets[1].update_end, 0.9375);
  EXPECT_EQ(t.buckets[1].update_seconds, 0.125);
  // The last update ends 1/8 s after the last exchange in both steps.
  EXPECT_EQ(t.tail_seconds, 0.125);
  // Exchanges [1/8, 1/4] and [1/2, 3/4] cover 3/8 s of the 5/8 s from 1/8
  // to 3/4 (shift 0); with shift 1/8, [1/8, 3/8] and [5/8, 7/8] cover 1/2 s
  // of 3/4 s.
  EXPECT_DOUBLE_EQ(t.exchange_busy_share, 0.5 * (0.375 / 0.625 + 0.5 / 0.75));
  std::ostringstream table;
  print_step_timeline(table, path, t);
  EXPECT_NE(table.str().find("the last update ends 125.0 ms after the last exchange"),
            std::string::npos)
      << table.str();
  table.str("");
  table << 0.5;  // the stream's format is as it was
  EXPECT_EQ(table.str(), "0.5");
  std::filesystem::remove(path);
}

// A MergeComp plan changes the buckets: the steps before its line are left
// out, and the skip counts again after it.
TEST(StepTimeline, StepsBeforeAMergeCompPlanAreLeftOut) {
  const auto path = write_log(
      "plan", step_with(R"("exchanges":[[0,1]],"updates":[[1,2]])") +
                  step_with(R"("exchanges":[[0,1]],"updates":[[1,2]])") +
                  R"({"event":"plan","after_step":2,"bucket_policy":"groups:1,1"})"
                  "\n" +
                  step_line(2, 4.0) + step_line(3, 0.0));
  const auto t = read_step_timeline(path, 1);
  EXPECT_EQ(t.steps, 1u);
  EXPECT_EQ(t.plan_after_step, std::optional<std::size_t>(2));
  ASSERT_EQ(t.buckets.size(), 2u);
  EXPECT_EQ(t.buckets[1].exchange_end, 0.75);  // step 3's, not step 2's
  std::ostringstream table;
  print_step_timeline(table, path, t);
  EXPECT_NE(table.str().find("after the first 1 that followed the MergeComp plan made after 2 steps"),
            std::string::npos)
      << table.str();
  std::filesystem::remove(path);
}

TEST(StepTimeline, OverlappingExchangesCountOnceInTheBusyShareAndNoUpdatesNoTail) {
  const auto path =
      write_log("overlap", step_with(R"("exchanges":[[0,0.5],[0.25,0.75],[1.5,2]])"));
  const auto t = read_step_timeline(path, 0);
  ASSERT_EQ(t.buckets.size(), 3u);
  EXPECT_FALSE(t.has_updates);
  EXPECT_EQ(t.tail_seconds, 0.0);
  EXPECT_EQ(t.exchange_busy_share, 0.625);  // [0, 0.75] and [1.5, 2] of [0, 2]
  std::ostringstream table;
  print_step_timeline(table, path, t);
  EXPECT_EQ(table.str().find("last update"), std::string::npos) << table.str();
  std::filesystem::remove(path);
}

// Each refusal names the file, the line where there is one, and the way out.
TEST(StepTimeline, LogsItCannotSummariseAreRefusedNamingWhy) {
  const auto expect_refused = [](const std::string& name, const std::string& text,
                                 std::size_t skip, const std::string& words) {
    const auto path = write_log(name, text);
    try {
      read_step_timeline(path, skip);
      ADD_FAILURE() << name << ": accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << name << ": " << e.what();
    }
    std::filesystem::remove(path);
  };
  expect_refused("no-timeline", step_with(R"("loss":0.5)"), 0,
                 "line 1: the step line has no 'exchanges'");
  expect_refused("replanned",
                 step_line(0, 0.0) + step_with(R"("exchanges":[[0,1]],"updates":[[1,2]])"), 0,
                 "line 2: 1 exchanges where earlier steps had 2");
  expect_refused("backwards", step_with(R"("exchanges":[[0.5,0.25]])"), 0,
                 "not a [start, end] pair");
  expect_refused("object", step_with(R"("exchanges":{"a":[0,1]})"), 0,
                 "not a list of [start, end] pairs");
  expect_refused("empty", step_with(R"("exchanges":[],"updates":[[0,1]])"), 0,
                 "'exchanges' is empty");
  expect_refused("uneven", step_with(R"("exchanges":[[0,1],[1,2]],"updates":[[2,3]])"), 0,
                 "1 updates for 2 exchanges");
  expect_refused("updates-stop",
                 step_with(R"("exchanges":[[0,1]],"updates":[[1,2]])") +
                     step_with(R"("exchanges":[[0,1]])"),
                 0, "line 2: 0 updates where earlier steps had 1");
  expect_refused("not-json", "step 1 took 3 ms\n", 0, "line 1: not a qccl train log line");
  expect_refused("all-skipped", step_line(0, 0.0) + step_line(1, 0.0), 2,
                 "no step left after skipping 2 of 2");
  EXPECT_THROW(read_step_timeline("/nonexistent/train.jsonl", 0), InvalidArgument);
}

}  // namespace
}  // namespace qccl::tools
