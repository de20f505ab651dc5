#include "qccl/tools/global_qsgd_quality_command.h"

#include <filesystem>
#include <iostream>

#include "qccl/experiments/global_qsgd/quality_report.h"
#include "qccl/experiments/global_qsgd/quality_variants.h"
#include "qccl/experiments/intsgd/rounding_output.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/rounding_command.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

constexpr const char* kExperiment = "global-qsgd-quality";

// --merge: no training; the earlier files' runs in one report.
void merge_files(const QualityCommand& command) {
  auto report = merge_rounding_results(split_list(command.merge), kExperiment, "fp32");
  if (!command.config.output.empty()) {
    std::filesystem::create_directories(command.config.output);
    report.files = write_rounding_outputs(report, command.config.output);
  }
  print_quality_report(std::cout, report);
}

}  // namespace

CLI::App* add_quality_experiment(CLI::App& experiment, QualityCommand& command) {
  auto* sub = experiment.add_subcommand(
      kExperiment,
      "Global-QSGD Table 4 (language model): test perplexity of the GPT trained with no "
      "quantization, linear dithering with 8 and 4 bits and exponential dithering with 8 "
      "bits over several seeds (run it on 4 ranks, the paper's workers)");
  auto& c = command.config;
  auto& t = c.plan.train;
  std::string all;
  for (const auto& v : quality_variants()) all += (all.empty() ? "" : ", ") + v.run.name;
  sub->add_option("--variants", command.variants,
                  "comma-separated, case-insensitive (default fp32,linear-8,linear-4,exp-8; "
                  "all: " + all + ")");
  sub->add_option("--seeds", command.seeds, "comma-separated seeds (default 1,2,3)");
  sub->add_option("--steps", c.plan.steps, "steps per run (default 400)");
  sub->add_option("--eval-every", c.plan.eval_every,
                  "evaluate the test set every N steps; divides --steps (default 50)");
  sub->add_option("--hidden", t.hidden, "gpt width (default 128)");
  sub->add_option("--layers", t.layers, "gpt transformer blocks (default 2)");
  sub->add_option("--sequence-length", t.sequence_length, "characters per sample (default 64)");
  sub->add_option("--batch", t.batch, "samples per rank per step (default 16)");
  sub->add_option("--lr", t.lr, "Adam's learning rate (default 0.003, cosine decay)");
  sub->add_option("--threads", t.threads, "libtorch threads per rank (default 1)");
  sub->add_option("--data-dir", t.data_dir, "fortunes directory (default Debian's)");
  sub->add_option("--output", c.output, "directory for global-qsgd-quality.{csv,json,svg}");
  sub->add_option("--merge", command.merge,
                  "comma-separated global-qsgd-quality.json files of earlier runs: no "
                  "training; their runs in one table (and --output)");
  add_launch_options(*sub, command.launch,
                     {.algorithm = "ring (default) or halving-doubling",
                      .quiet = "no line per finished run"});
  return sub;
}

int run_quality_command(QualityCommand& command, int argc, char** argv) {
  auto& c = command.config;
  if (!command.merge.empty()) return exit_code_of([&] { merge_files(command); });
  const int settings = exit_code_of([&] {
    c.variants = split_list(command.variants);
    c.seeds = parse_seed_list(command.seeds);
    c.plan.train.algorithm = command.launch.parsed_algorithm();
    c.progress = !command.launch.quiet;
    command.launch.check();
    validate(c);
  });
  if (settings != kExitOk) return settings;
  return run_on_ranks(command.launch, argc, argv, [&](Communicator& comm) {
    const auto report = run_quality_experiment(comm, c);
    if (comm.rank() == 0) print_quality_report(std::cout, report);
  });
}

}  // namespace qccl::tools
