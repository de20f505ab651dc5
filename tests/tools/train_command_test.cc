// `qccl train`'s config files and per-codec output paths.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "qccl/common/errors.h"
#include "qccl/tools/train_command.h"

namespace qccl::tools {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(TrainConfigFile, OptionsGoFirstSoTheCommandLineWins) {
  const auto path = write_config("qccl-train-a.toml",
                                 "[train]\n# comment\nmodel = \"mlp\"  # trailing\nlr = 0.1\n"
                                 "resume = true\nforce = false\n"
                                 "codec = [\"fp32\", \"global-qsgd:bits=8,dither=exp\"]\n");
  const auto args = expand_train_config({"train", "--ranks", "2", "--config", path, "--lr", "0.2"});
  const std::vector<std::string> expected{
      "train", "--model", "mlp", "--lr", "0.1", "--resume", "--codec", "fp32", "--codec",
      "global-qsgd:bits=8,dither=exp", "--ranks", "2", "--lr", "0.2"};
  EXPECT_EQ(args, expected);
}

TEST(TrainConfigFile, OtherCommandsAndEqualsFormAreHandled) {
  EXPECT_EQ(expand_train_config({"bench", "allreduce", "--config", "x"}),
            (std::vector<std::string>{"bench", "allreduce", "--config", "x"}));
  const auto path = write_config("qccl-train-b.toml", "epochs = 3\n");
  EXPECT_EQ(expand_train_config({"train", "--config=" + path}),
            (std::vector<std::string>{"train", "--epochs", "3"}));
}

TEST(TrainConfigFile, BadLinesAndMissingFilesNameTheProblem) {
  const auto path = write_config("qccl-train-c.toml", "model = mlp\nepochs 3\n");
  try {
    expand_train_config({"train", "--config", path});
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(expand_train_config({"train", "--config", "/nonexistent.toml"}), InvalidArgument);
  EXPECT_THROW(expand_train_config({"train", "--config"}), InvalidArgument);
}

// Each mistake is named with its file and line, never silently applied.
TEST(TrainConfigFile, UnknownAndRepeatedKeysAndDirectoriesAreRefused) {
  const std::vector<std::string> known{"model", "lr", "codec"};
  const auto expect_refused = [&](const std::string& path, const std::string& words) {
    try {
      expand_train_config({"train", "--config", path}, known);
      FAIL() << "accepted " << path;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_refused(write_config("qccl-train-d.toml", "model = mlp\nlearning_rate = 0.1\n"),
                 "line 2: unknown option 'learning_rate'");
  expect_refused(write_config("qccl-train-e.toml", "lr = 0.1\nmodel = mlp\nlr = 0.2\n"),
                 "line 3: 'lr' is set again (first on line 1)");
  expect_refused(std::filesystem::temp_directory_path().string(), "is a directory");
  // Known keys, each once, pass; without a list of options any key passes.
  EXPECT_NO_THROW(expand_train_config(
      {"train", "--config", write_config("qccl-train-f.toml", "lr = 0.1\ncodec = [\"fp32\"]\n")},
      known));
  EXPECT_NO_THROW(expand_train_config(
      {"train", "--config", write_config("qccl-train-g.toml", "anything = 1\n")}));
}

TEST(TrainPaths, OneCodecKeepsThePathSeveralGetTheirNames) {
  EXPECT_EQ(path_for_codec("out/train.jsonl", "fp32", 1), "out/train.jsonl");
  EXPECT_EQ(path_for_codec("out/train.jsonl", "global-qsgd:bits=8,dither=exp", 2),
            "out/train.global-qsgd-bits-8-dither-exp.jsonl");
  EXPECT_EQ(path_for_codec("ckpt", "fp16", 3), "ckpt.fp16");
  EXPECT_EQ(path_for_codec("", "fp16", 3), "");
}

}  // namespace
}  // namespace qccl::tools
