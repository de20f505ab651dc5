// Writing files: a failed write is an error naming the file, never a torn or
// silently short file; a path that cannot be written is found before a run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "../support/file_size_limit.h"

namespace qccl {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = fs::temp_directory_path() /
                   ("qccl-files-test-" + std::string(test->name()) + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <typename E>
std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

TEST(Files, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  const auto dir = scratch_dir();
  const auto path = (dir / "out.json").string();
  write_file_atomically(path, "first\n");
  write_file_atomically(path, "second\n");
  EXPECT_EQ(contents(path), "second\n");
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

// A write that fails part-way (here the file-size limit, as a full disk
// would) names the file and leaves the previous contents and no temporary.
TEST(Files, AtomicWriteThatFailsPartWayKeepsThePreviousFile) {
  const auto dir = scratch_dir();
  const auto path = (dir / "summary.json").string();
  write_file_atomically(path, "the good one\n");
  std::string message;
  {
    test::FileSizeLimit limit(4096);
    message = message_of<IoError>([&] { write_file_atomically(path, std::string(100000, 'x')); });
  }
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(contents(path), "the good one\n");
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

// A pipe (or a device: /dev/null as root) is not replaced by a regular file.
TEST(Files, AtomicWriteRefusesToReplaceWhatIsNotARegularFile) {
  const auto fifo = scratch_dir() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(write_file_atomically(fifo.string(), "x"), InvalidArgument);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_FALSE(fs::exists(fifo.string() + ".partial"));
}

TEST(Files, AtomicWriteIntoAMissingDirectoryIsABadPath) {
  const auto path = (scratch_dir() / "missing" / "out.json").string();
  const auto message = message_of<InvalidArgument>([&] { write_file_atomically(path, "x"); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

// /dev/full fails every write with ENOSPC, as a full disk does.
TEST(Files, LineFileOnAFullDiskSaysSo) {
  LineFile full("/dev/full", false);
  const auto message = message_of<IoError>([&] { full.append("{\"event\":\"start\"}"); });
  EXPECT_NE(message.find("'/dev/full'"), std::string::npos) << message;
  EXPECT_NE(message.find("disk full?"), std::string::npos) << message;
}

// The line that crosses the limit is cut back: the file holds whole lines.
TEST(Files, LineFileKeepsWholeLinesWhenTheDiskFills) {
  const auto path = (scratch_dir() / "log.jsonl").string();
  const std::string line(100, 'a');
  std::size_t written = 0;
  {
    LineFile log(path, false);
    test::FileSizeLimit limit(1050);  // ten lines and half of the eleventh
    const auto message = message_of<IoError>([&] {
      for (; written < 20; ++written) log.append(line);
    });
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
  EXPECT_EQ(written, 10u);
  std::string expected;
  for (int i = 0; i < 10; ++i) expected += line + "\n";
  EXPECT_EQ(contents(path), expected);
}

TEST(Files, LineFileAppendsOrTruncates) {
  const auto path = (scratch_dir() / "log.jsonl").string();
  std::ofstream(path) << "earlier\n";
  LineFile(path, false).append("more");
  EXPECT_EQ(contents(path), "earlier\nmore\n");
  LineFile(path, true).append("fresh");
  EXPECT_EQ(contents(path), "fresh\n");
}

TEST(Files, ChecksBeforeARunRefuseWhatCannotBeWrittenAndLeaveNothing) {
  const auto dir = scratch_dir();
  const auto missing = (dir / "no-such-dir" / "out.json").string();
  EXPECT_NE(message_of<InvalidArgument>([&] { check_can_replace(missing, "the summary"); })
                .find("the summary '" + missing + "'"),
            std::string::npos);
  EXPECT_THROW(check_can_append(missing, "the log"), InvalidArgument);
  EXPECT_THROW(check_can_replace(dir.string(), "the summary"), InvalidArgument);  // a directory
  EXPECT_THROW(check_can_replace("/dev/null", "the summary"), InvalidArgument);   // a device
  EXPECT_THROW(check_can_append(dir.string(), "the log"), InvalidArgument);

  const auto fresh = (dir / "fresh.json").string();
  check_can_replace(fresh, "the summary");
  check_can_append(fresh, "the log");
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(fresh + ".partial"));
  const auto kept = (dir / "kept.jsonl").string();
  std::ofstream(kept) << "earlier\n";
  check_can_append(kept, "the log");
  EXPECT_EQ(contents(kept), "earlier\n");

  const auto checkpoints = dir / "new" / "checkpoints";
  check_can_write_into(checkpoints.string(), "--checkpoint-dir", "probe");
  EXPECT_TRUE(fs::is_directory(checkpoints));
  EXPECT_TRUE(fs::is_empty(checkpoints));
  const auto file = (dir / "kept.jsonl").string();
  EXPECT_THROW(check_can_write_into(file, "--checkpoint-dir", "probe"), InvalidArgument);
}

}  // namespace
}  // namespace qccl
