#include "qccl/tools/simulate_command.h"

#include <iostream>

#include "qccl/tools/codec_help.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

CLI::App* add_simulate(CLI::App& simulate, SimulateCommand& command) {
  auto* sub = simulate.add_subcommand(
      "allreduce", "R compressed mean-allreduces of N dumped vectors on N in-process ranks");
  sub->footer(codec_list());
  add_ranks_option(*sub, command.config.ranks, "number of ranks N (threads of this process)")->required();
  sub->add_option("--codec", command.config.codec, "codec spec")->required();
  sub->add_option("--input", command.config.input, "N·d little-endian fp32 values, rank-major");
  sub->add_option("--synthetic", command.config.synthetic,
                  "instead of --input: D gradient-like values per rank, from --seed");
  sub->add_option("--output", command.config.output,
                  "where to write the R·d fp32 results, one mean vector per round")->required();
  sub->add_option("--rounds", command.config.rounds, "independent rounds R (default 1)");
  sub->add_option("--seed", command.config.seed, "random seed (default 0)");
  sub->add_option("--algo", command.algorithm, "ring or halving-doubling (default ring)");
  return sub;
}

int run_simulate_command(SimulateCommand& command, int, char**) {
  return exit_code_of([&] {
    command.config.algorithm = parse_algorithm(command.algorithm);
    print_summary(std::cout, run_simulation(command.config));
  });
}

}  // namespace qccl::tools
