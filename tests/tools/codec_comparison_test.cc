// The training comparison's report: runs read back from a compare-codecs
// folder, every codec set against fp32 of the same model and link, and
// clear errors for a folder that is not one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "qccl/common/errors.h"
#include "qccl/tools/codec_comparison.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

class CodecComparisonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("qccl-comparison-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  static std::string summary(double accuracy, double steps_per_second, double sent, int steps) {
    return "[{\"accuracy\": " + std::to_string(accuracy) + ", \"test_loss\": 0.5" +
           ", \"steps_per_second\": " + std::to_string(steps_per_second) +
           ", \"sent_bytes_per_step\": " + std::to_string(sent) +
           ", \"steps\": " + std::to_string(steps) + "}]";
  }
  fs::path dir_;
};

TEST_F(CodecComparisonTest, SetsEveryCodecAgainstFp32OfItsModelAndRate) {
  write("a.json", summary(0.875, 20.0, 1048576, 468));
  write("b.json", summary(0.850, 40.0, 32768, 468));
  write("c.json", summary(0.60, 1.0, 73400320, 30));
  write("runs.tsv",
        "cnn\t1gbit\tfp32\t--lr 0.05\ta.json\n"
        "cnn\t1gbit\ttopk\t--lr 0.05\tb.json\n"
        "recommender\t100mbit\tfp16\t--optimizer adam\tc.json\n");
  const auto runs = load_comparison(dir_.string());
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].codec, "topk");
  EXPECT_DOUBLE_EQ(runs[1].ms_per_step, 25.0);
  EXPECT_DOUBLE_EQ(runs[1].sent_bytes_per_step, 32768);
  EXPECT_EQ(runs[2].steps, 30u);
  const std::string md = comparison_markdown(runs);
  // topk: 2.5 points below fp32, twice its speed.
  EXPECT_NE(md.find("| topk | --lr 0.05 | 468 | 85.00% | -2.50 | 0.5000 | 25.0 | 2.00× | 32.0 KiB |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("### recommender, 100mbit"), std::string::npos);
  // No fp32 on that model and link: nothing to compare with.
  EXPECT_NE(md.find("| fp16 | --optimizer adam | 30 | 60.00% | - | 0.5000 | 1000.0 | - | 70.0 MiB |"),
            std::string::npos)
      << md;
  const auto files = write_comparison_report(runs, dir_.string());
  ASSERT_EQ(files.size(), 3u);
  for (const auto& file : files) EXPECT_GT(fs::file_size(file), 0u) << file;
  std::ifstream svg(dir_ / "comparison.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<circle"), std::string::npos) << "each run is a dot";
}

TEST_F(CodecComparisonTest, RejectsFoldersThatAreNotComparisons) {
  auto message = [&] {
    try {
      load_comparison(dir_.string());
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message().find("runs.tsv"), std::string::npos);
  write("runs.tsv", "cnn\t1gbit\tfp32\n");
  EXPECT_NE(message().find("line 1: expected 5 tab-separated fields"), std::string::npos);
  write("runs.tsv", "cnn\t1gbit\tfp32\t\tmissing.json\n");
  EXPECT_NE(message().find("did that run fail?"), std::string::npos);
  write("bad.json", "{\"accuracy\": 1}");
  write("runs.tsv", "cnn\t1gbit\tfp32\t\tbad.json\n");
  EXPECT_NE(message().find("is not a qccl train summary"), std::string::npos);
}

}  // namespace
}  // namespace qccl::tools
