#include "qccl/tools/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/tools/bench_command.h"
#include "qccl/tools/codec_bench_command.h"
#include "qccl/tools/codecs_command.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/gan_command.h"
#include "qccl/tools/global_qsgd_quality_command.h"
#include "qccl/tools/logreg_command.h"
#include "qccl/tools/model_command.h"
#include "qccl/tools/plan_command.h"
#include "qccl/tools/qsdp_command.h"
#include "qccl/tools/rates_command.h"
#include "qccl/tools/sgda_command.h"
#include "qccl/tools/workers_command.h"
#include "qccl/tools/report_command.h"
#include "qccl/tools/rounding_command.h"
#include "qccl/tools/simulate_command.h"
#include "qccl/tools/timeline_command.h"
#include "qccl/tools/train_command.h"
#include "qccl/tools/training_report_command.h"

namespace qccl::tools {
namespace {

// Every command's options, filled in by the parser.
struct Commands {
  BenchCommand bench;
  CodecBenchCommand codec_bench;
  ReportCommand report;
  TrainingReportCommand training_report;
  TimelineCommand timeline;
  ModelCommand model;
  SimulateCommand simulate;
  LogregCommand logreg;
  RoundingCommand rounding;
  RatesCommand rates;
  WorkersCommand workers;
  SgdaCommand sgda;
  GanCommand gan;
  QsdpCommand qsdp;
  QualityCommand global_qsgd_quality;
  TrainCommand train, plan;
  CodecsCommand codecs;
};

// A command of the tree: where it hangs ("" for the top, "bench",
// "experiment", "simulate"), how it adds itself with its options, and how
// it runs. Every command has this shape; the table below is the whole
// command line.
struct CommandEntry {
  std::string group;
  std::function<CLI::App*(CLI::App& parent)> add;
  std::function<int(int argc, char** argv)> run;
};

// The groups commands hang from, with their descriptions.
struct CommandGroup {
  std::string name, description;
};

std::vector<CommandGroup> command_groups() {
  return {{"bench", "measure collectives in the nccl-tests convention"},
          {"simulate", "run codecs on your own data, in one process"},
          {"experiment", "reproduce the papers' experiments"}};
}

// Binds command `C` to its adder and runner.
template <typename C>
CommandEntry entry(std::string group, C& command, CLI::App* (*add)(CLI::App&, C&),
                   int (*run)(C&, int, char**)) {
  return {std::move(group), [&command, add](CLI::App& parent) { return add(parent, command); },
          [&command, run](int argc, char** argv) { return run(command, argc, argv); }};
}

// A bench operation: the same command state for each (the operation it ran).
CommandEntry bench_entry(Commands& c, BenchOperation op, std::string description) {
  return {"bench",
          [&c, op, description](CLI::App& parent) {
            return add_bench_operation(parent, op, description, c.bench);
          },
          [&c](int argc, char** argv) { return run_bench(c.bench, argc, argv); }};
}

std::vector<CommandEntry> command_table(Commands& c) {
  return {
      bench_entry(c, BenchOperation::allreduce, "allreduce (ring, halving-doubling, native MPI)"),
      bench_entry(c, BenchOperation::allgather,
                  "allgather (ring, halving-doubling, native MPI_Allgather)"),
      bench_entry(c, BenchOperation::reduce_scatter,
                  "reduce-scatter (ring, halving-doubling, native MPI_Reduce_scatter_block)"),
      bench_entry(c, BenchOperation::broadcast, "broadcast (pipelined binomial tree)"),
      entry("bench", c.codec_bench, add_codec_bench, run_codec_bench_command),
      entry("bench", c.report, add_report, run_report_command),
      entry("bench", c.training_report, add_training_report, run_training_report_command),
      entry("bench", c.timeline, add_timeline, run_timeline_command),
      entry("", c.codecs, add_codecs, run_codecs_command),
      entry("", c.model, add_model, run_model),
      entry("simulate", c.simulate, add_simulate, run_simulate_command),
      entry("experiment", c.logreg, add_logreg_experiment, run_logreg_command),
      entry("experiment", c.rounding, add_rounding_experiment, run_rounding_command),
      entry("experiment", c.rates, add_rates_experiment, run_rates_command),
      entry("experiment", c.workers, add_workers_experiment, run_workers_command),
      entry("experiment", c.sgda, add_sgda_experiment, run_sgda_command),
      entry("experiment", c.gan, add_gan_experiment, run_gan_command),
      entry("experiment", c.qsdp, add_qsdp_experiment, run_qsdp_command),
      entry("experiment", c.global_qsgd_quality, add_quality_experiment, run_quality_command),
      entry("", c.train, add_train, run_train_command),
      entry("", c.plan, add_plan, run_plan_command),
  };
}

// The deepest subcommand the parser entered, for error messages.
const CLI::App* active_command(const CLI::App& app) {
  const CLI::App* current = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : current->get_subcommands()) {
      current = sub;
      deeper = true;
      break;
    }
  }
  return current;
}

std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command; command = command->get_parent()) {
    path = command->get_name() + (path.empty() ? "" : " ") + path;
  }
  return path;
}

std::string valid_options(const CLI::App* command) {
  std::string list;
  for (const CLI::Option* option : command->get_options()) {
    if (option->get_name().empty()) continue;
    list += (list.empty() ? "" : ", ") + option->get_name();
  }
  for (const CLI::App* sub : command->get_subcommands({})) {
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  return list;
}

// Parses argv (with `train --config FILE` expanded) into `c`; returns an
// exit code when the parse ends the program (help, version, a usage
// error), nothing when a command is to run.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    // `train --config FILE` becomes the options FILE sets (CLI11 parses
    // arguments in reverse order from a vector).
    std::vector<std::string> args(argv + 1, argv + argc);
    args = expand_train_config(args, train_option_names(app));
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --version
  } catch (const InvalidArgument& e) {  // a bad config file
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    const CLI::App* active = active_command(app);
    std::cerr << "qccl: " << e.what() << "\n";
    // The list helps with a name that is not an option, not with a value.
    const bool unknown = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ||
                         dynamic_cast<const CLI::OptionNotFound*>(&e) != nullptr;
    if (unknown) {
      std::cerr << "valid for '" << command_path(active) << "': " << valid_options(active) << "\n";
    }
    std::cerr << "run '" << command_path(active) << " --help' for details\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// CLI11 reads "-1" into an unsigned option as its largest value (so
// `--max-steps-per-epoch -1` silently meant "no cap"): every unsigned
// option of every command refuses a sign, naming the option.
void refuse_negative_unsigned(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name().rfind("UINT", 0) != 0) continue;
    // CLI11 puts the option's name before the message.
    option->check(CLI::Validator(
        [](std::string& value) -> std::string {
          const auto first = value.find_first_not_of(" \t");
          if (first != std::string::npos && value[first] == '-') {
            return "takes a number of 0 or more, not " + value;
          }
          return {};
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_negative_unsigned(*sub);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "qccl: compressed collectives for communication-efficient distributed training.\n"
      "Run under mpirun (one rank per process) or with --ranks N (ranks as threads).",
      "qccl"};
  app.set_version_flag("--version", std::string("qccl ") + QCCL_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<std::string, CLI::App*>> groups{{"", &app}};
  for (const auto& g : command_groups()) {
    auto* sub = app.add_subcommand(g.name, g.description);
    sub->require_subcommand(1);
    groups.emplace_back(g.name, sub);
  }
  Commands commands;
  const auto table = command_table(commands);
  std::vector<CLI::App*> added;
  for (const auto& e : table) {
    const auto group = std::find_if(groups.begin(), groups.end(),
                                    [&](const auto& g) { return g.first == e.group; });
    added.push_back(e.add(*group->second));
  }
  refuse_negative_unsigned(app);
  if (const auto code = parse(app, argc, argv)) return *code;
  for (std::size_t k = 0; k < table.size(); ++k) {
    if (added[k]->parsed()) return table[k].run(argc, argv);
  }
  return kExitUsage;
}

}  // namespace qccl::tools
