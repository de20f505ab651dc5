#include "qccl/tools/rounding_command.h"

#include <filesystem>
#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/rounding_output.h"
#include "qccl/experiments/intsgd/rounding_report.h"
#include "qccl/experiments/intsgd/rounding_variants.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

// The options given as non-zero replace every model's default.
RoundingOverrides overrides_of(const RoundingCommand& c) {
  RoundingOverrides o;
  const auto set = [](std::optional<std::size_t>& field, std::size_t value) {
    if (value != 0) field = value;
  };
  set(o.steps, c.steps);
  set(o.eval_every, c.eval_every);
  set(o.batch, c.batch);
  set(o.hidden, c.hidden);
  set(o.sequence_length, c.sequence_length);
  if (c.lr != 0) o.lr = c.lr;
  return o;
}

// --merge: no training; the earlier files' runs in one report.
void merge_files(const RoundingCommand& command) {
  auto report = merge_rounding_results(split_list(command.merge));
  if (!command.config.output.empty()) {
    std::filesystem::create_directories(command.config.output);
    report.files = write_rounding_outputs(report, command.config.output);
  }
  print_rounding_report(std::cout, report);
}

}  // namespace

std::vector<std::uint64_t> parse_seed_list(const std::string& text) {
  std::vector<std::uint64_t> seeds;
  for (auto item : split_list(text)) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      if (item.find('-') != std::string::npos) throw std::invalid_argument(item);
      value = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) {
      throw InvalidArgument("--seeds: '" + item + "' is not a non-negative integer; give e.g. 1,2,3");
    }
    seeds.push_back(value);
  }
  return seeds;
}

CLI::App* add_rounding_experiment(CLI::App& experiment, RoundingCommand& command) {
  auto* sub = experiment.add_subcommand(
      "intsgd-rounding",
      "IntSGD Figure 1 and Tables 2-3: random vs deterministic rounding, the heuristic "
      "(SwitchML) scale and full-precision SGD, training the CNN and the character LSTM on 16 "
      "ranks over several seeds");
  auto& c = command.config;
  std::string variants;
  for (const auto& v : rounding_variants()) variants += (variants.empty() ? "" : ", ") + v.name;
  sub->add_option("--models", command.models, "comma-separated: cnn, char-lstm (default both)");
  sub->add_option("--variants", command.variants,
                  "comma-separated, case-insensitive (default sgd,intsgd-random,intsgd-determ,"
                  "heuristic; all: " + variants + ")");
  sub->add_option("--seeds", command.seeds, "comma-separated seeds (default 1,2,3)");
  sub->add_option("--steps", command.steps, "steps per run (default cnn 1200, char-lstm 400)");
  sub->add_option("--eval-every", command.eval_every,
                  "evaluate the test set every N steps; divides --steps (default cnn 150, "
                  "char-lstm 50)");
  sub->add_option("--batch", command.batch, "samples per rank per step (default cnn 8, char-lstm 4)");
  sub->add_option("--lr", command.lr, "learning rate (default cnn 0.05, char-lstm 6)");
  sub->add_option("--hidden", command.hidden, "char-lstm: LSTM width (default 128)");
  sub->add_option("--sequence-length", command.sequence_length,
                  "char-lstm: characters per sample (default 32)");
  sub->add_option("--threads", c.threads, "libtorch threads per rank (default 1)");
  sub->add_option("--output", c.output, "directory for intsgd-rounding.{csv,json,svg}");
  sub->add_option("--merge", command.merge,
                  "comma-separated intsgd-rounding.json files of earlier runs: no training; "
                  "their runs in one table (and --output)");
  add_launch_options(*sub, command.launch,
                     {.algorithm = "ring (default) or halving-doubling",
                      .quiet = "no line per finished run"});
  return sub;
}

int run_rounding_command(RoundingCommand& command, int argc, char** argv) {
  auto& c = command.config;
  if (!command.merge.empty()) return exit_code_of([&] { merge_files(command); });
  const int settings = exit_code_of([&] {
    c.models = split_list(command.models);
    c.variants = split_list(command.variants);
    c.seeds = parse_seed_list(command.seeds);
    c.overrides = overrides_of(command);
    c.algorithm = command.launch.parsed_algorithm();
    c.progress = !command.launch.quiet;
    command.launch.check();
    validate(c);
  });
  if (settings != kExitOk) return settings;
  return run_on_ranks(command.launch, argc, argv, [&](Communicator& comm) {
    const auto report = run_rounding_experiment(comm, c);
    if (comm.rank() == 0) print_rounding_report(std::cout, report);
  });
}

}  // namespace qccl::tools
