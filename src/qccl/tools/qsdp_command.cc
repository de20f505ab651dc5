#include "qccl/tools/qsdp_command.h"

#include <iostream>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/experiments/qsdp/qsdp_report.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/rounding_command.h"

namespace qccl::tools {

std::vector<std::string> split_variant_list(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    names.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return names;
}

CLI::App* add_qsdp_experiment(CLI::App& experiment, QsdpCommand& command) {
  auto* sub = experiment.add_subcommand(
      "qsdp",
      "QSDP §6, Tables 1 and 3: a small GPT trained by the sharded engine once per variant "
      "(weights and gradients codecs), with perplexity, ms/step and speedup against fp32");
  auto& c = command.config;
  auto& t = c.train;
  std::string names;
  for (const auto& name : qsdp_variant_names()) names += (names.empty() ? "" : ",") + name;
  sub->add_option("--variants", command.variants,
                  "comma-separated, case-insensitive (default all: " + names + ")");
  sub->add_option("--steps", c.steps,
                  "training steps per variant (default " + std::to_string(kQsdpDefaultSteps) + ")");
  sub->add_option("--refit", c.refit,
                  "learned variants: fit the levels at steps R, 4.75R and 9.5R, the paper's 400, "
                  "1900 and 3800 scaled (default: steps/12)");
  sub->add_option("--hidden", t.hidden, "gpt width (default 128)");
  sub->add_option("--layers", t.layers, "gpt transformer blocks (default 2)");
  sub->add_option_function<std::string>(
      "--gpt-outliers", [&t](const std::string& text) { engines::set_gpt_outliers(t, text); },
      "ROWS:SCALE: that many rows of every block's linear weights made SCALE times larger at "
      "initialisation, in every variant (default none)");
  sub->add_option("--sequence-length", t.sequence_length, "characters per sample (default 64)");
  sub->add_option("--batch", t.batch, "samples per rank per step (default 16)");
  sub->add_option("--optimizer", t.optimizer, "adamw (default), adam or sgd");
  sub->add_option("--beta1", t.beta1, "adam and adamw (default 0.9, QSDP's Table 4)");
  sub->add_option("--beta2", t.beta2, "adam and adamw (default 0.95, QSDP's Table 4)");
  sub->add_option("--weight-decay", t.weight_decay, "decoupled with adamw (default 0)");
  sub->add_option("--lr", t.lr, "learning rate of every variant (default 0.003)");
  sub->add_option("--seed", t.seed, "seed of initialisation, data order and codecs (default 1)");
  sub->add_option("--seeds", command.seeds,
                  "comma-separated: every variant once per seed, the table their mean and spread");
  sub->add_option("--threads", t.threads, "libtorch threads per rank (default 1)");
  sub->add_option("--data-dir", t.data_dir, "fortunes directory (default Debian's)");
  sub->add_option("--output", c.output, "directory for qsdp.{csv,json,svg}");
  add_launch_options(*sub, command.launch,
                     {.algorithm = "ring (default) or halving-doubling",
                      .quiet = "no progress bar or per-variant lines"});
  return sub;
}

int run_qsdp_command(QsdpCommand& command, int argc, char** argv) {
  auto& c = command.config;
  const int settings = exit_code_of([&] {
    c.variants = split_variant_list(command.variants);
    c.seeds = parse_seed_list(command.seeds);
    if (!command.variants.empty() && c.variants.empty()) {
      throw InvalidArgument("--variants names no variant; give names such as baseline,fp32,W8G8");
    }
    c.train.algorithm = command.launch.parsed_algorithm();
    c.train.progress = !command.launch.quiet;
    command.launch.check();
    validate(c);
  });
  if (settings != kExitOk) return settings;
  return run_on_ranks(command.launch, argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_qsdp_experiment(comm, c);
                        if (comm.rank() == 0) print_qsdp_report(std::cout, report);
                      });
}

}  // namespace qccl::tools
