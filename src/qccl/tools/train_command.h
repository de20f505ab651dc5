// `qccl train`: data-parallel training with a codec (or several, one after
// another, compared side by side at the end).
#pragma once

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "qccl/tools/launch_options.h"
#include "qccl/training/train_config.h"

namespace qccl::tools {

struct TrainCommand {
  engines::TrainConfig config;
  std::vector<std::string> codecs;
  std::string weights_codec;  // empty: the engine's default
  std::string bucket_cap = "25M", first_bucket = "1M";
  std::string summary_json;
  std::string config_file;  // consumed by expand_train_config before parsing
  bool no_overlap_updates = false;
  bool dense_embeddings = false;
  LaunchOptions launch;
  // qccl plan: profile, search and print the MergeComp plan, then stop.
  bool planning = false;
  std::string link_rate;  // plan for this rate (e.g. 1gbit) instead of the measured one
  std::string algo_model;  // --algo auto: the model's coefficients (qccl model --scaling)
};

CLI::App* add_train(CLI::App& app, TrainCommand& command);
// Which of train's options a command takes: all of them, or those that shape
// `qccl plan`'s profile (no checkpoints, run control, engine or --buckets;
// --link-rate besides).
enum class TrainOptionSet { train, plan };
// train's options on `app`, in the groups its --help shows.
void add_train_options(CLI::App& app, TrainCommand& command, TrainOptionSet set);

// `qccl train --config FILE`: replaces the --config pair in `args` (argv
// without the program name) by the options FILE sets, placed first so that
// options given on the command line win. FILE holds TOML-style lines
// `key = value` (keys are option names without dashes; strings may be
// quoted; true/false for flags; ["a", "b"] for repeated options such as
// codec); `#` starts a comment and a `[train]` header is allowed. Throws
// InvalidArgument naming the file and line on anything else: a key that is
// not one of `options` (train's long option names without dashes; empty:
// not checked), a key given twice, a file that is a directory.
std::vector<std::string> expand_train_config(const std::vector<std::string>& args,
                                             const std::vector<std::string>& options = {});
// train's long option names without dashes, for expand_train_config.
std::vector<std::string> train_option_names(const CLI::App& app);
int run_train_command(TrainCommand& command, int argc, char** argv);

// One row per run: metric, time, step-time split, payload and ratio.
void print_train_summaries(std::ostream& out, const std::vector<engines::TrainSummary>& runs);

// Log and checkpoint paths for run `index` of `count` codecs: unchanged for
// a single codec, else with the codec's name inserted ("train.jsonl" ->
// "train.global-qsgd-bits-8.jsonl"), so runs never overwrite each other.
std::string path_for_codec(const std::string& path, const std::string& codec, std::size_t count);

}  // namespace qccl::tools
