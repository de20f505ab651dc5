// Nothing lost, nothing silent: a damaged checkpoint file is refused on
// every rank; replicas whose parameters differ stop the run; a resume with
// other settings is refused naming the setting; a write that fails (a full
// disk) stops every rank naming the file and keeps the last good checkpoint
// and a log of whole lines; endless NaN steps are not skipped forever.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engines/train_helpers.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "support/file_size_limit.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using namespace test_support;
using Json = nlohmann::json;

std::string read_bytes(const fs::path& path) { return read_whole_file(path.string()); }

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::uint32_t u32(const std::string& b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
std::uint16_t u16(const std::string& b, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}

// A stored (uncompressed) entry of the zip archive libtorch writes.
struct Entry {
  std::string name;
  std::size_t offset = 0, size = 0;  // of the entry's data in the file
};

// The archive's entries, from its central directory (the end-of-directory
// record holds where it starts and how many entries it has).
std::vector<Entry> zip_entries(const std::string& b) {
  const auto end = b.rfind(std::string("PK\x05\x06", 4));
  EXPECT_NE(end, std::string::npos) << "not a zip archive";
  std::vector<Entry> entries;
  std::size_t at = u32(b, end + 16);
  for (std::size_t i = 0; i < u16(b, end + 10); ++i) {
    Entry e;
    e.size = u32(b, at + 20);
    e.name = b.substr(at + 46, u16(b, at + 28));
    const std::size_t local = u32(b, at + 42);
    e.offset = local + 30 + u16(b, local + 26) + u16(b, local + 28);
    entries.push_back(e);
    at += 46 + u16(b, at + 28) + u16(b, at + 30) + u16(b, at + 32);
  }
  return entries;
}

enum class Damage { parameter, momentum };

// Adds 1 to the first element of fc1.weight (or of its SGD momentum) in a
// checkpoint file: damage that leaves the file well-formed, so only its
// checksum (or the replicas' comparison) can find it.
void damage(const fs::path& file, Damage what) {
  torch::serialize::InputArchive archive;
  archive.load_from(file.string());
  torch::Tensor weight;
  archive.read("model.fc1.weight", weight);
  const std::string weight_bytes(static_cast<const char*>(weight.data_ptr()),
                                 static_cast<std::size_t>(weight.nbytes()));
  auto bytes = read_bytes(file);
  std::vector<Entry> matches;
  for (const auto& e : zip_entries(bytes)) {
    if (e.size != weight_bytes.size()) continue;
    const bool is_weight = bytes.compare(e.offset, e.size, weight_bytes) == 0;
    if (is_weight == (what == Damage::parameter)) matches.push_back(e);
  }
  ASSERT_EQ(matches.size(), 1u) << "cannot tell fc1.weight's entry in " << file;
  float x;
  std::memcpy(&x, bytes.data() + matches[0].offset, 4);
  x += 1.0f;
  std::memcpy(bytes.data() + matches[0].offset, &x, 4);
  write_bytes(file, bytes);
}

// Records `file`'s new checksum in the manifest, as if it had been written
// damaged: then only the replicas' comparison can find the damage.
void rewrite_checksum(const fs::path& dir, int rank, const fs::path& file) {
  Json manifest = Json::parse(read_bytes(dir / "latest.json"));
  const auto bytes = read_bytes(file);
  manifest["files"][rank]["checksum"] = checksum_text(checksum64(std::as_bytes(std::span(bytes))));
  write_bytes(dir / "latest.json", manifest.dump(2));
}

// Two ranks, SGD with momentum, stopped after 3 steps with a checkpoint.
TrainConfig checkpointed_run(const fs::path& dir) {
  auto config = short_run("fp32");
  config.max_steps_per_epoch = 6;
  config.checkpoint_dir = dir.string();
  config.stop_after_steps = 3;
  train_on(2, config);
  EXPECT_TRUE(fs::exists(dir / "step-3" / "rank-1.pt"));
  config.stop_after_steps = 0;
  config.resume = true;
  return config;
}

TEST(Checkpoint, DamagedTensorBytesAreRefusedOnEveryRankNamingTheFile) {
  const auto dir = scratch_dir("damaged");
  const auto config = checkpointed_run(dir);
  damage(dir / "step-3" / "rank-1.pt", Damage::parameter);
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("step-3/rank-1.pt' is damaged"), std::string::npos) << message;
  EXPECT_EQ(message.find("rank-0.pt"), std::string::npos) << "rank 0's file is intact: " << message;
}

TEST(Checkpoint, TruncatedOrMissingFilesAreRefusedOnEveryRank) {
  const auto dir = scratch_dir("truncated");
  const auto config = checkpointed_run(dir);
  const auto file = dir / "step-3" / "rank-0.pt";
  const auto bytes = read_bytes(file);
  write_bytes(file, bytes.substr(0, bytes.size() - 100));
  auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("rank-0.pt' has " + std::to_string(bytes.size() - 100) + " bytes"),
            std::string::npos) << message;
  fs::remove(file);
  message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("rank-0.pt"), std::string::npos) << message;
}

// The file passes its checksum (as if damaged before it was written), but
// rank 1's parameters are not rank 0's: the check after resuming stops both.
TEST(Checkpoint, ReplicasThatDifferAfterResumingStopEveryRank) {
  const auto dir = scratch_dir("differ");
  const auto config = checkpointed_run(dir);
  damage(dir / "step-3" / "rank-1.pt", Damage::parameter);
  rewrite_checksum(dir, 1, dir / "step-3" / "rank-1.pt");
  const auto message = train_fails_on_every_rank<MismatchError>(2, config);
  EXPECT_NE(message.find("step 3 (after resuming): the replicas' parameters differ: ranks {0}"),
            std::string::npos) << message;
  EXPECT_NE(message.find("ranks {1}"), std::string::npos) << message;
}

// Rank 1's momentum differs: the parameters agree after resuming and part
// after the next step; the periodic check finds them at step 4.
TEST(Checkpoint, ReplicasThatDivergeLaterAreFoundAtTheNextCheck) {
  const auto dir = scratch_dir("diverge");
  auto config = checkpointed_run(dir);
  damage(dir / "step-3" / "rank-1.pt", Damage::momentum);
  rewrite_checksum(dir, 1, dir / "step-3" / "rank-1.pt");
  config.verify_every = 2;
  const auto message = train_fails_on_every_rank<MismatchError>(2, config);
  EXPECT_NE(message.find("step 4 (checked every 2 steps): the replicas' parameters differ"),
            std::string::npos) << message;
}

// A replica check or a skip limit is a decision every rank must take
// alike: a rank with another --verify-every would leave the others waiting
// at the check, one with another limit would stop alone.
TEST(ReplicaCheckSettings, RanksWithOtherChecksOrLimitsFailBeforeAnyStep) {
  for (const auto& change : {+[](TrainConfig& c) { c.verify_every = 2; },
                             +[](TrainConfig& c) { c.max_skipped_total = 20; }}) {
    const auto message = test::expect_throw_on_every_rank<MismatchError>(2, [&](Communicator& comm) {
      auto config = short_run("fp32");
      if (comm.rank() == 1) change(config);
      train(comm, config);
    });
    EXPECT_NE(message.find("disagree on 'run control'"), std::string::npos) << message;
    EXPECT_NE(message.find("--verify-every 100"), std::string::npos) << message;
  }
}

// Every setting that changes what the resumed steps compute is compared
// with the manifest's record, and named when it differs.
TEST(Resume, RefusesOtherSettingsNamingTheSettingAndBothValues) {
  const auto dir = scratch_dir("settings");
  const auto config = checkpointed_run(dir);
  const auto refused = [&](TrainConfig changed, const std::string& expected) {
    const auto message = train_fails_on_every_rank<InvalidArgument>(2, changed);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  auto c = config;
  c.codec = CodecSpec::parse("fp16");
  refused(c, "written with codec 'fp32'; this run has codec 'fp16'");
  c = config;
  c.batch = 32;
  refused(c, "written with batch '16'; this run has batch '32'");
  c = config;
  c.lr = 0.1;
  refused(c, "written with optimizer 'sgd lr=0.05");
  c = config;
  c.lr_schedule = "cosine";
  refused(c, "written with lr-schedule 'constant, warm-up 0 steps'");
  c = config;
  c.seed = 2;
  refused(c, "seed '1'");
  c = config;
  c.max_steps_per_epoch = 5;
  refused(c, "max-steps-per-epoch '6'");
  // More epochs at a constant rate continue the same run.
  c = config;
  c.epochs = 2;
  EXPECT_EQ(train_on(2, c)[0].steps, 9u);
}

TEST(Resume, MoreEpochsUnderADecayingScheduleAreRefused) {
  const auto dir = scratch_dir("epochs");
  auto config = short_run("fp32");
  config.lr_schedule = "cosine";
  config.checkpoint_dir = dir.string();
  config.stop_after_steps = 2;
  train_on(2, config);
  config.stop_after_steps = 0;
  config.resume = true;
  config.epochs = 2;
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("written with epochs '1'; this run has epochs '2'"), std::string::npos)
      << message;
}

// A write that fails part-way through a rank's file (the file-size limit
// stands in for a full disk): every rank stops with an IoError naming the
// file, the checkpoint of step 2 stays the latest, and resuming from it
// still ends bitwise equal to an uninterrupted run.
TEST(Checkpoint, AFailedWriteStopsEveryRankAndKeepsTheLastGoodCheckpoint) {
  const auto dir = scratch_dir("full");
  auto config = short_run("fp32");
  config.max_steps_per_epoch = 6;
  const auto whole = train_on(2, config);
  config.checkpoint_dir = dir.string();
  config.stop_after_steps = 2;
  train_on(2, config);
  config.stop_after_steps = 0;
  config.resume = true;
  config.checkpoint_every = 4;
  std::string message;
  {
    test::FileSizeLimit limit(64 << 10);
    message = train_fails_on_every_rank<IoError>(2, config);
  }
  EXPECT_NE(message.find("checkpoint of step 4 not saved"), std::string::npos) << message;
  EXPECT_NE(message.find("step-4/rank-0.pt"), std::string::npos) << message;
  EXPECT_NE(message.find("is still the latest"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "step-4")) << "a partial checkpoint was left behind";
  EXPECT_EQ(Json::parse(read_bytes(dir / "latest.json"))["step"], 2);
  const auto resumed = train_on(2, config);
  EXPECT_TRUE(bitwise_equal(whole[0].final_parameters, resumed[0].final_parameters));
}

// Only rank 1 cannot write (a directory stands where its file would be
// written): rank 0 does not wait for it, both stop with rank 1's error.
TEST(Checkpoint, OneRankThatCannotWriteStopsEveryRank) {
  const auto dir = scratch_dir("one-rank");
  auto config = short_run("fp32");
  config.checkpoint_dir = dir.string();
  fs::create_directories(dir / "step-4" / "rank-1.pt.partial");
  const auto message = train_fails_on_every_rank<IoError>(2, config);
  EXPECT_NE(message.find("rank 1: cannot write '" + (dir / "step-4" / "rank-1.pt").string()),
            std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "latest.json"));
  EXPECT_FALSE(fs::exists(dir / "step-4" / "rank-0.pt"));
}

// Rank 0 alone writes the log: its error ends the run, and the other ranks
// are stopped (not left waiting). Returns the run's error message.
template <typename E>
std::string run_fails_with(int ranks, const TrainConfig& config) {
  try {
    train_on(ranks, config);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "the run succeeded";
  return "";
}

// Every line of the log is whole, also when the disk fills mid-line.
TEST(Log, AFullDiskStopsTheRunAndLeavesWholeLines) {
  const auto dir = scratch_dir("log");
  fs::create_directories(dir);
  auto config = short_run("fp32");
  config.log_path = (dir / "log.jsonl").string();
  std::string message;
  {
    test::FileSizeLimit limit(1500);  // the start line and a few steps
    message = run_fails_with<IoError>(2, config);
  }
  EXPECT_NE(message.find(config.log_path), std::string::npos) << message;
  const auto text = read_bytes(config.log_path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the log ends mid-line";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) EXPECT_TRUE(Json::accept(line)) << "a torn line: " << line;
}

TEST(Log, OnDevFullTheRunStopsSayingTheDiskIsFull) {
  auto config = short_run("fp32");
  config.log_path = "/dev/full";
  config.force = true;
  const auto message = run_fails_with<IoError>(2, config);
  EXPECT_NE(message.find("'/dev/full'"), std::string::npos) << message;
  EXPECT_NE(message.find("disk full?"), std::string::npos) << message;
}

TEST(Outputs, ACheckpointDirectoryThatCannotBeWrittenIsRefusedBeforeTraining) {
  const auto dir = scratch_dir("outputs");
  fs::create_directories(dir);
  std::ofstream(dir / "a-file") << "x";
  auto config = short_run("fp32");
  config.checkpoint_dir = (dir / "a-file").string();
  config.log_path = (dir / "log.jsonl").string();
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("--checkpoint-dir '" + config.checkpoint_dir + "'"), std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(config.log_path)) << "training started";
}

// --skip-nonfinite skips a few bad steps, not a run that diverged.
TEST(Skipping, StopsAfterTooManyNonFiniteStepsInARowOrInAll) {
  auto config = short_run("fp32");
  config.lr = 1e30;  // every step after the first has NaN/Inf gradients
  config.skip_nonfinite = true;
  config.max_steps_per_epoch = 8;
  auto message = train_fails_on_every_rank<NonFiniteError>(2, config);
  EXPECT_NE(message.find("4 steps with NaN or Inf in a row, more than "
                         "--max-skipped-consecutive 3"), std::string::npos) << message;
  config.max_skipped_consecutive = 100;
  config.max_skipped_total = 5;
  message = train_fails_on_every_rank<NonFiniteError>(2, config);
  EXPECT_NE(message.find("6 steps with NaN or Inf in this run, more than --max-skipped-total 5"),
            std::string::npos) << message;
  config.max_skipped_total = 7;
  EXPECT_EQ(train_on(2, config)[0].skipped_steps, 7u);
}

// The count of steps skipped in a row survives a resume.
TEST(Skipping, TheCountInARowContinuesAcrossAResume) {
  const auto dir = scratch_dir("skip-resume");
  auto config = short_run("fp32");
  config.lr = 1e30;
  config.skip_nonfinite = true;
  config.max_steps_per_epoch = 6;
  config.checkpoint_dir = dir.string();
  config.stop_after_steps = 3;  // steps 2 and 3 skipped
  train_on(2, config);
  config.stop_after_steps = 0;
  config.resume = true;
  const auto message = train_fails_on_every_rank<NonFiniteError>(2, config);
  EXPECT_NE(message.find("4 steps with NaN or Inf in a row"), std::string::npos) << message;
}

}  // namespace
}  // namespace qccl::engines
