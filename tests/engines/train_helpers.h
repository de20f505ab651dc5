// Shared by the training tests: scratch directories, a short run's
// settings, and running `train` on in-process ranks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "qccl/training/train_config.h"
#include "support/world.h"

namespace qccl::engines::test_support {

namespace fs = std::filesystem;

// A fresh directory per test and process (ctest runs tests in parallel).
inline fs::path scratch_dir(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = fs::temp_directory_path() /
                   ("qccl-engine-test-" + std::string(test->name()) + "-" + name + "-" +
                    std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// A few MLP steps on Fashion-MNIST with small buckets, so that every run
// has several buckets reduced while backward continues.
inline TrainConfig short_run(const std::string& codec) {
  TrainConfig c;
  c.model = "mlp";
  c.data = "fashion-mnist";
  c.codec = CodecSpec::parse(codec);
  c.batch = 16;
  c.lr = 0.05;
  c.max_steps_per_epoch = 4;
  c.bucket_cap_bytes = 256 << 10;
  c.first_bucket_bytes = 64 << 10;
  c.progress = false;
  c.return_parameters = true;
  return c;
}

// Runs `config` on `ranks` in-process ranks; returns every rank's summary.
inline std::vector<TrainSummary> train_on(int ranks, const TrainConfig& config) {
  std::vector<TrainSummary> out(static_cast<std::size_t>(ranks));
  test::run_world(ranks, [&](Communicator& comm) {
    out[static_cast<std::size_t>(comm.rank())] = train(comm, config);
  });
  return out;
}

// Runs `config` on `ranks` ranks stopped after `stop_after` steps, with a
// checkpoint every 2 steps in a fresh scratch directory, then resumed from
// that directory to the end; returns the resumed run's summaries.
inline std::vector<TrainSummary> interrupted_and_resumed(int ranks, TrainConfig config,
                                                         std::size_t stop_after) {
  const auto dir = scratch_dir("resume");
  config.checkpoint_dir = dir.string();
  config.checkpoint_every = 2;
  config.stop_after_steps = stop_after;
  train_on(ranks, config);
  EXPECT_TRUE(fs::exists(dir / "latest.json")) << "the interrupted run left no checkpoint";
  config.stop_after_steps = 0;
  config.resume = true;
  auto resumed = train_on(ranks, config);
  fs::remove_all(dir);
  return resumed;
}

// Runs `config` on `ranks` ranks expecting E on every rank; returns rank 0's message.
template <typename E>
std::string train_fails_on_every_rank(int ranks, const TrainConfig& config) {
  return test::expect_throw_on_every_rank<E>(ranks, [&](Communicator& comm) { train(comm, config); });
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace qccl::engines::test_support
