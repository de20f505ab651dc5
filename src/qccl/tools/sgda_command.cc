#include "qccl/tools/sgda_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_sgda_experiment(CLI::App& experiment, SgdaCommand& command) {
  auto* sub = experiment.add_subcommand(
      "qgenx-sgda",
      "Q-GenX Appendix H.1: Q-GenX against quantized SGDA (QSGDA) with the same quantizer, "
      "the gap of each method's ergodic average against T under absolute and relative noise");
  auto& c = command.config;
  sub->add_option("--methods", command.methods,
                  "comma-separated: qgenx-de, qgenx-optda, qgenx-da, sgda (constant step), "
                  "sgda-adaptive (default qgenx-de,sgda,sgda-adaptive)");
  sub->add_option("--codec", c.codec,
                  "the quantizer every method uses (default "
                  "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed)");
  sub->add_option("--noise", command.noises, "comma-separated: absolute, relative (default both)");
  sub->add_option("--iterations", c.iterations, "T, iterations per run (default 4096)");
  sub->add_option("--seeds", c.seeds, "runs per method and noise, seeds --seed.. (default 3)");
  sub->add_option("--seed", c.seed, "first seed: problem, oracle and codec (default 0)");
  sub->add_option("--sgda-step", c.sgda_step,
                  "SGDA's step: gamma (sgda), or the adaptive rule's scale (default 0.1)");
  sub->add_option("--n", c.game.n, "each player's dimension, d = 2n (default 16)");
  sub->add_option("--sigma", c.game.sigma, "absolute noise: E|U|^2 = sigma^2 (default 1)");
  sub->add_option("--keep", c.game.keep,
                  "relative noise: probability a coordinate is sampled (default 0.5, c = 1)");
  sub->add_option("--alpha", c.game.alpha,
                  "relative-noise game's regularisation, > 0 for co-coercivity (default 1e-4)");
  sub->add_option("--radius", c.game.radius, "radius of the gap's ball around the solution (default 1)");
  sub->add_option("--fit-octaves", c.fit_octaves, "fit the slope over T in [T/2^k, T] (default 3)");
  sub->add_option("--output", c.output, "directory for qgenx-sgda.{csv,json,svg}");
  add_launch_options(*sub, command.launch);
  return sub;
}

int run_sgda_command(SgdaCommand& command, int argc, char** argv) {
  auto& c = command.config;
  try {
    c.methods = split_list(command.methods);
    c.noises = split_list(command.noises);
    c.algorithm = command.launch.parsed_algorithm();
    command.launch.check();
    validate(c);
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.launch, argc, argv, [&](Communicator& comm) {
    const auto report = run_sgda_experiment(comm, c);
    if (comm.rank() == 0) print_sgda_report(std::cout, report);
  });
}

}  // namespace qccl::tools
