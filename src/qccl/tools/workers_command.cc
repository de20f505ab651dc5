#include "qccl/tools/workers_command.h"

#include <charconv>
#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/launch_options.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

// "1,2,4,8,16" → {1, 2, 4, 8, 16}; InvalidArgument naming a bad entry.
std::vector<int> parse_workers(const std::string& text) {
  std::vector<int> workers;
  for (const auto& item : split_list(text)) {
    int k = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), k);
    if (error != std::errc() || end != item.data() + item.size()) {
      throw InvalidArgument("--workers: '" + item + "' is not a whole number; give a list such "
                            "as 1,2,4,8,16");
    }
    workers.push_back(k);
  }
  return workers;
}

}  // namespace

CLI::App* add_workers_experiment(CLI::App& experiment, WorkersCommand& command) {
  auto* sub = experiment.add_subcommand(
      "qgenx-workers",
      "Q-GenX Theorems 3-4 in K: the final gap against the number of workers (in-process "
      "ranks) under absolute noise (K^-1/2) and relative noise (K^-1), fitted in log-log");
  command.app = sub;
  auto& c = command.config;
  sub->add_option("--workers", command.workers,
                  "comma-separated numbers of workers K, increasing, each an in-process world "
                  "(default 1,2,4,8,16)");
  sub->add_option("--method", c.method,
                  "da (dual averaging), de (dual extrapolation, default) or optda (optimistic)");
  sub->add_option("--codec", command.codecs,
                  "a codec variant; repeat for several (default: fp32 and 4-bit uniform qgenx)");
  sub->add_option("--noise", command.noises, "comma-separated: absolute, relative (default both)");
  sub->add_option("--iterations", c.iterations, "T, iterations per run (default 1024)");
  sub->add_option("--seeds", c.seeds, "runs per K, codec and noise, seeds --seed.. (default 3)");
  sub->add_option("--seed", c.seed, "first seed: problem, oracle and codec (default 0)");
  sub->add_option("--n", c.game.n, "each player's dimension, d = 2n (default 16)");
  sub->add_option("--sigma", c.game.sigma, "absolute noise per worker: E|U|^2 = sigma^2 (default 1)");
  sub->add_option("--keep", c.game.keep,
                  "relative noise: probability a coordinate is sampled (default 0.5, c = 1)");
  sub->add_option("--alpha", c.game.alpha,
                  "relative-noise game's regularisation, > 0 for co-coercivity (default 1e-4)");
  sub->add_option("--radius", c.game.radius, "radius of the gap's ball around the solution (default 1)");
  sub->add_option("--algo", command.algorithm, "ring or halving-doubling (default ring)");
  sub->add_option("--timeout", c.timeout_ms, "bound on every wait of every rank, ms (default 300000)");
  sub->add_option("--output", c.output, "directory for qgenx-workers.{csv,json,svg}");
  return sub;
}

int run_workers_command(WorkersCommand& command, int /*argc*/, char** /*argv*/) {
  auto& c = command.config;
  try {
    c.workers = parse_workers(command.workers);
    c.codecs = command.codecs.empty() ? default_workers_codecs() : command.codecs;
    c.noises = split_list(command.noises);
    LaunchOptions launch;
    launch.algorithm = command.algorithm;
    c.algorithm = launch.parsed_algorithm();
    if (c.timeout_ms > kMaxTimeoutMs) throw InvalidArgument("--timeout must be at most 30 days");
    validate(c);
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return exit_code_of([&] {
    const auto report = run_workers_experiment(c, &std::cout);
    print_workers_report(std::cout, report);
  });
}

}  // namespace qccl::tools
