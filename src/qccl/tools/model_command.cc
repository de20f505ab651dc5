#include "qccl/tools/model_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

void add_scaling_options(CLI::App& sub, ModelCommand& command) {
  auto& s = command.scaling;
  sub.add_option("--scaling", s.results,
                 "fit the model of hosts of several ranks to a scripts/bench-scaling folder, "
                 "check it at every point, and predict --workload steps (instead of --results)");
  sub.add_option("--fit-hosts", s.fit_hosts,
                 "--scaling: the one-rank hosts whose fp32 ring fits the network (default 4)");
  sub.add_option("--plot", s.plot, "--scaling: write the predictions' SVG here");
  sub.add_option("--workload", command.workloads,
                 "--scaling: NAME=PARAMETERS[:COMPUTE_MS] to predict (repeatable; default the "
                 "recommender, cnn and gpt of qccl train without their compute)");
  sub.add_option("--scaling-ranks", s.ranks, "--scaling: rank counts (default 4 16 64 256 1024)");
  sub.add_option("--ranks-per-host", s.ranks_per_host,
                 "--scaling: ranks per host, at most (n ranks: min(this, n/2); default 8)");
  sub.add_option("--scaling-rates", command.scaling_rates,
                 "--scaling: links to predict for, e.g. 1gbit 100gbit (none: no predictions)");
  sub.add_option("--codec", s.codec, "--scaling: the codec beside fp32 (default global-qsgd)");
}

void run_scaling(ModelCommand& command) {
  auto& s = command.scaling;
  s.output = command.config.output;
  for (const auto& rate : command.scaling_rates) s.link_rates_bps.push_back(parse_rate(rate));
  for (const auto& text : command.workloads) s.workloads.push_back(parse_workload(text));
  if (s.workloads.empty()) s.workloads = default_workloads();
  if (s.fit_hosts < 2) throw InvalidArgument("--fit-hosts must be at least 2");
  if (s.ranks_per_host < 1) throw InvalidArgument("--ranks-per-host must be at least 1");
  for (int n : s.ranks) {
    if (n < 2) throw InvalidArgument("--scaling-ranks must be at least 2 each");
  }
  run_scaling_command(s, std::cout);
}

}  // namespace

CLI::App* add_model(CLI::App& app, ModelCommand& command) {
  auto* sub = app.add_subcommand(
      "model", "fit the Global-QSGD §7 performance model to a benchmark-suite folder, report its "
               "error, and predict allreduce time and Eq. (10) for a link");
  sub->add_option("--results", command.config.results, "the suite's results folder");
  sub->add_option("--output", command.config.output, "also write the fits and predictions as JSON");
  sub->add_option("--link-rate", command.link_rate, "predict for this link, e.g. 1gbit or 25gbit");
  sub->add_option("--size", command.size, "vector size for the prediction (default 64M)");
  sub->add_option("--ranks", command.config.ranks, "ranks for the prediction (default 4)");
  sub->add_option("--ratio", command.config.ratio,
                  "also predict a codec of this compression ratio with fp32's reduction speed");
  add_scaling_options(*sub, command);
  return sub;
}

int run_model(ModelCommand& command, int, char**) {
  return exit_code_of([&] {
    if (command.config.results.empty() == command.scaling.results.empty()) {
      throw InvalidArgument("give one of --results (a scripts/bench-suite folder) and --scaling "
                            "(a scripts/bench-scaling folder)");
    }
    if (!command.scaling.results.empty()) return run_scaling(command);
    if (!command.link_rate.empty()) command.config.link_rate_bps = parse_rate(command.link_rate);
    command.config.bytes = parse_bytes(command.size, "--size");
    if (command.config.ranks < 2) throw InvalidArgument("--ranks must be at least 2");
    if (command.config.ratio < 0) throw InvalidArgument("--ratio must be positive");
    run_model_command(command.config, std::cout);
  });
}

}  // namespace qccl::tools
