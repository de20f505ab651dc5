// A mix-up cannot pass as a resume: rank files swapped together with their
// manifest entries, or copied in from another run, are refused by the
// identity each file records; a second run on a checkpoint directory in use
// is refused naming the holder; outputs that would write over each other
// or over the checkpoint are refused before training; rank files whose
// manifest was lost are not deleted by a fresh run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "engines/train_helpers.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/training/checkpoint_identity.h"
#include "qccl/training/checkpoint_lock.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using namespace test_support;
using Json = nlohmann::json;

std::string text_of(const fs::path& path) { return read_whole_file(path.string()); }

Json manifest_of(const fs::path& dir) { return Json::parse(text_of(dir / "latest.json")); }

void write_manifest(const fs::path& dir, const Json& manifest) {
  std::ofstream(dir / "latest.json", std::ios::trunc) << manifest.dump(2);
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The sharded engine with fp32 codecs on 2 ranks: the MLP's groups split
// into shards of equal sizes, so rank files of the same size.
TrainConfig sharded_run(const fs::path& dir) {
  auto c = short_run("fp32");
  c.engine = "sharded";
  c.weights_codec = CodecSpec::parse("fp32");
  c.max_steps_per_epoch = 6;
  c.checkpoint_dir = dir.string();
  return c;
}

// Runs `config` stopped after 3 steps; returns it set to resume.
TrainConfig stopped_at_3(TrainConfig config) {
  config.stop_after_steps = 3;
  train_on(2, config);
  config.stop_after_steps = 0;
  config.resume = true;
  return config;
}

// Rank 0's and rank 1's files trade places, and so do their manifest
// entries: every size and checksum still matches. Each file's identity
// says whose it is.
TEST(CheckpointIdentity, RankFilesSwappedWithTheirManifestEntriesAreRefused) {
  const auto dir = scratch_dir("swapped");
  const auto config = stopped_at_3(sharded_run(dir));
  const auto step = dir / "step-3";
  ASSERT_EQ(fs::file_size(step / "rank-0.pt"), fs::file_size(step / "rank-1.pt"));
  fs::rename(step / "rank-0.pt", step / "rank-0.tmp");
  fs::rename(step / "rank-1.pt", step / "rank-0.pt");
  fs::rename(step / "rank-0.tmp", step / "rank-1.pt");
  auto manifest = manifest_of(dir);
  for (const char* key : {"bytes", "checksum"}) {
    std::swap(manifest["files"][0][key], manifest["files"][1][key]);
  }
  write_manifest(dir, manifest);
  const std::string run = manifest["run"];
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("step-3/rank-0.pt' holds rank 1 of 2 of run " + run +
                         "; this rank expected rank 0 of 2 of run " + run),
            std::string::npos) << message;
  EXPECT_NE(message.find("step-3/rank-1.pt' holds rank 0 of 2"), std::string::npos) << message;
}

// Run B's rank 1 file in run A's checkpoint, its manifest entry updated.
TEST(CheckpointIdentity, AFileFromAnotherRunIsRefusedNamingBothRuns) {
  const auto a = scratch_dir("a"), b = scratch_dir("b");
  auto config = short_run("fp32");
  config.checkpoint_dir = a.string();
  const auto resume_a = stopped_at_3(config);
  config.checkpoint_dir = b.string();
  stopped_at_3(config);
  fs::copy_file(b / "step-3" / "rank-1.pt", a / "step-3" / "rank-1.pt",
                fs::copy_options::overwrite_existing);
  auto manifest = manifest_of(a);
  manifest["files"][1] = manifest_of(b)["files"][1];
  write_manifest(a, manifest);
  const std::string run_a = manifest["run"], run_b = manifest_of(b)["run"];
  ASSERT_NE(run_a, run_b);
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, resume_a);
  EXPECT_NE(message.find("rank-1.pt' holds rank 1 of 2 of run " + run_b +
                         "; this rank expected rank 1 of 2 of run " + run_a),
            std::string::npos) << message;
  EXPECT_EQ(message.find("rank-0.pt"), std::string::npos) << message;
}

// The run's identity is chosen once and kept by every later checkpoint,
// resumed parts included.
TEST(CheckpointIdentity, TheRunIsKeptAcrossCheckpointsAndResumes) {
  const auto dir = scratch_dir("kept");
  auto config = short_run("fp32");
  config.max_steps_per_epoch = 6;
  config.checkpoint_dir = dir.string();
  config.checkpoint_every = 1;
  config.stop_after_steps = 2;
  train_on(2, config);
  const std::string run = manifest_of(dir)["run"];
  EXPECT_EQ(run.size(), 16u);
  config.resume = true;
  train_on(2, config);
  EXPECT_EQ(manifest_of(dir)["step"], 4);
  EXPECT_EQ(manifest_of(dir)["run"], run);
}

// A manifest of format 2 (before files recorded their identity) still
// resumes, bitwise equal to an uninterrupted run.
TEST(CheckpointIdentity, AManifestWithoutARunStillResumes) {
  const auto dir = scratch_dir("format-2");
  auto whole = sharded_run(dir);
  whole.checkpoint_dir.clear();
  const auto expected = train_on(2, whole);
  const auto config = stopped_at_3(sharded_run(dir));
  auto manifest = manifest_of(dir);
  manifest["format"] = 2;
  manifest.erase("run");
  write_manifest(dir, manifest);
  const auto resumed = train_on(2, config);
  EXPECT_TRUE(bitwise_equal(expected[0].final_parameters, resumed[0].final_parameters));
  EXPECT_EQ(manifest_of(dir)["format"], 3);
}

TEST(CheckpointIdentity, ShardBoundsFollowRankOrderAndAreCompared) {
  test::run_world(3, [](Communicator& comm) {
    const std::int64_t sizes[2] = {10 + comm.rank(), 4};
    const auto bounds = consecutive_shards(comm, sizes);
    const std::int64_t first = comm.rank() == 0 ? 0 : comm.rank() == 1 ? 10 : 21;
    EXPECT_EQ(bounds[0], (ShardBounds{first, first + 10 + comm.rank(), 33}));
    EXPECT_EQ(bounds[1], (ShardBounds{4 * comm.rank(), 4 * comm.rank() + 4, 12}));
  });
  const RankIdentity expected{7, 1, 2, {{0, 5, 10}, {5, 10, 10}}};
  auto held = expected;
  EXPECT_NO_THROW(check_identity("f", held, identity_from_words(identity_words(held))));
  held.shards[1] = {0, 5, 10};
  try {
    check_identity("f", held, expected);
    ADD_FAILURE() << "other shard bounds passed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'f' holds elements [0, 5) of 10 of tensor 1; this rank "
                                         "expected elements [5, 10) of 10"),
              std::string::npos) << e.what();
  }
}

// While one run holds the directory, another is refused before any step,
// naming the holder; once released, the directory can be used again.
TEST(CheckpointLock, ASecondRunOnTheDirectoryIsRefusedNamingTheHolder) {
  const auto dir = scratch_dir("locked");
  fs::create_directories(dir);
  auto config = short_run("fp32");
  config.checkpoint_dir = dir.string();
  config.log_path = (dir / "log.jsonl").string();
  test::run_world(1, [&](Communicator& comm) {
    const CheckpointLock held(comm, dir.string());
    const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
    const auto holder = "pid " + std::to_string(::getpid()) + " on host " + host_name();
    EXPECT_NE(message.find("--checkpoint-dir '" + dir.string() + "' is in use by another run: " +
                           holder + " holds its lock"),
              std::string::npos) << message;
  });
  EXPECT_FALSE(fs::exists(dir / "latest.json"));
  EXPECT_FALSE(fs::exists(config.log_path)) << "the refused run started";
  EXPECT_EQ(train_on(2, config)[0].steps, 4u);
}

// A failed run releases the lock; a lock file left by a process that died
// (its text still naming it) blocks nothing.
TEST(CheckpointLock, AFailedRunOrADeadProcessLeavesNoLockBehind) {
  const auto dir = scratch_dir("released");
  auto config = short_run("fp32");
  config.checkpoint_dir = dir.string();
  config.resume = true;  // no checkpoint yet: refused after the lock was taken
  train_fails_on_every_rank<InvalidArgument>(2, config);
  std::ofstream(dir / ".lock", std::ios::trunc) << "pid 999999 on host gone\n";
  config.resume = false;
  EXPECT_EQ(train_on(2, config)[0].steps, 4u);
}

// Each pair is refused on every rank before anything is written, however
// the paths are spelled.
TEST(Outputs, OutputsThatAliasEachOtherOrTheCheckpointAreRefused) {
  const auto dir = scratch_dir("aliases");
  fs::create_directories(dir / "sub");
  fs::create_symlink(dir / "sub", dir / "link");
  const auto refused = [&](const std::vector<OutputPath>& outputs, const std::string& expected) {
    const auto message = test::expect_throw_on_every_rank<InvalidArgument>(
        2, [&](Communicator& comm) { check_outputs(comm, outputs); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  using K = OutputPath::Kind;
  const OutputPath log{(dir / "x").string(), "the log", K::appended, false};
  const OutputPath summary{(dir / "sub" / ".." / "x").string(), "--summary-json", K::replaced,
                           false};
  refused({log, summary}, "the log '" + log.path + "' and --summary-json '" + summary.path +
                              "' are the same path");
  refused({{(dir / "link" / "s.json").string(), "--summary-json", K::replaced, false},
           {(dir / "sub" / "s.json").string(), "the log", K::appended, false}},
          "are the same path");
  const OutputPath checkpoint{(dir / "ckpt/").string(), "--checkpoint-dir", K::directory, true};
  for (const auto* inside : {"latest.json", "step-3/notes", ".lock"}) {
    refused({checkpoint, {(dir / "ckpt" / inside).string(), "--summary-json", K::replaced, false}},
            "lies where --checkpoint-dir '" + checkpoint.path + "' keeps its '" +
                fs::path(inside).begin()->string() + "'");
  }
  refused({checkpoint, {(dir / "ckpt").string(), "the log", K::appended, false}}, "same path");
  EXPECT_FALSE(fs::exists(dir / "x"));
  EXPECT_FALSE(fs::exists(dir / "ckpt")) << "a refused run created its checkpoint directory";
  // Apart: a log beside the checkpoint's own files; two logs on a device.
  test::run_world(2, [&](Communicator& comm) {
    check_outputs(comm, {checkpoint, {(dir / "ckpt" / "train.log").string(), "the log", K::appended,
                                      false}});
    check_outputs(comm, {{"/dev/null", "the log", K::appended, false},
                         {"/dev/null", "the log", K::appended, false}});
  });
}

// The trainer's own outputs: a log where the checkpoint keeps its manifest.
TEST(Outputs, ALogInPlaceOfTheManifestIsRefusedBeforeTraining) {
  const auto dir = scratch_dir("log-manifest");
  auto config = short_run("fp32");
  config.checkpoint_dir = dir.string();
  config.log_path = (dir / "latest.json").string();
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("keeps its 'latest.json'"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(config.log_path));
}

// The manifest was deleted; the rank files are the only copy of the run's
// state. A fresh run refuses to start there (it would delete them); --force
// replaces them.
TEST(Checkpoint, RankFilesWithoutAManifestAreKeptFromAFreshRun) {
  const auto dir = scratch_dir("no-manifest");
  auto config = short_run("fp32");
  config.checkpoint_dir = dir.string();
  config.max_steps_per_epoch = 6;
  config.stop_after_steps = 3;
  train_on(2, config);
  fs::remove(dir / "latest.json");
  config.stop_after_steps = 2;
  const auto message = train_fails_on_every_rank<InvalidArgument>(2, config);
  EXPECT_NE(message.find("'" + dir.string() + "' holds checkpoint files (step-3/rank-0.pt and 1 "
                         "more) but no manifest"),
            std::string::npos) << message;
  EXPECT_TRUE(fs::exists(dir / "step-3" / "rank-0.pt"));
  EXPECT_TRUE(fs::exists(dir / "step-3" / "rank-1.pt"));
  config.force = true;
  train_on(2, config);
  EXPECT_FALSE(fs::exists(dir / "step-3"));
  EXPECT_EQ(manifest_of(dir)["step"], 2);
}

}  // namespace
}  // namespace qccl::engines
