#include "qccl/tools/rates_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_rates_experiment(CLI::App& experiment, RatesCommand& command) {
  auto* sub = experiment.add_subcommand(
      "qgenx-rates",
      "Q-GenX Theorems 3-4: the gap of the ergodic average against T under absolute noise "
      "(slope -1/2) and relative noise (slope -1), per codec, with the bits per coordinate");
  command.app = sub;
  auto& c = command.config;
  sub->add_option("--method", c.method,
                  "da (dual averaging), de (dual extrapolation, default) or optda (optimistic)");
  sub->add_option("--codec", command.codecs,
                  "a codec variant; repeat for several (default: fp32 and the qgenx quantizer's "
                  "variants)");
  sub->add_option("--noise", command.noises, "comma-separated: absolute, relative (default both)");
  sub->add_option("--iterations", c.iterations, "T, iterations per run (default 4096)");
  sub->add_option("--seeds", c.seeds, "runs per variant and noise, seeds --seed.. (default 2)");
  sub->add_option("--seed", c.seed, "first seed: problem, oracle and codec (default 0)");
  sub->add_option("--n", c.n, "each player's dimension, d = 2n (default 16)");
  sub->add_option("--sigma", c.sigma, "absolute noise: E|U|^2 = sigma^2 (default 1)");
  sub->add_option("--keep", c.keep,
                  "relative noise: probability a coordinate is sampled (default 0.5, c = 1)");
  sub->add_option("--alpha", c.alpha,
                  "relative-noise game's regularisation, > 0 for co-coercivity (default 1e-4)");
  sub->add_option("--radius", c.radius, "radius of the gap's ball around the solution (default 1)");
  sub->add_option("--fit-octaves", c.fit_octaves,
                  "fit the slope over T in [T/2^k, T] (default 3)");
  sub->add_flag("--quick", command.quick,
                "a short run: T = 256 and 1 seed unless --iterations or --seeds say otherwise");
  sub->add_option("--output", c.output, "directory for qgenx-rates.{csv,json,svg}");
  add_launch_options(*sub, command.launch);
  return sub;
}

int run_rates_command(RatesCommand& command, int argc, char** argv) {
  auto& c = command.config;
  try {
    c.codecs = command.codecs.empty() ? default_rate_codecs() : command.codecs;
    c.noises = split_list(command.noises);
    c.algorithm = command.launch.parsed_algorithm();
    if (command.quick) {
      if (command.app->get_option("--iterations")->count() == 0) c.iterations = 256;
      if (command.app->get_option("--seeds")->count() == 0) c.seeds = 1;
    }
    command.launch.check();
    validate(c);
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.launch, argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_rates_experiment(comm, c);
                        if (comm.rank() == 0) print_rates_report(std::cout, report);
                      });
}

}  // namespace qccl::tools
