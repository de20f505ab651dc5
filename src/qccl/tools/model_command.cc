#include "qccl/tools/model_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_model(CLI::App& app, ModelCommand& command) {
  auto* sub = app.add_subcommand(
      "model", "fit the Global-QSGD §7 performance model to a benchmark-suite folder, report its "
               "error, and predict allreduce time and Eq. (10) for a link");
  sub->add_option("--results", command.config.results, "the suite's results folder")->required();
  sub->add_option("--output", command.config.output, "also write the fits and predictions as JSON");
  sub->add_option("--link-rate", command.link_rate, "predict for this link, e.g. 1gbit or 25gbit");
  sub->add_option("--size", command.size, "vector size for the prediction (default 64M)");
  sub->add_option("--ranks", command.config.ranks, "ranks for the prediction (default 4)");
  sub->add_option("--ratio", command.config.ratio,
                  "also predict a codec of this compression ratio with fp32's reduction speed");
  return sub;
}

int run_model(ModelCommand& command, int, char**) {
  return exit_code_of([&] {
    if (!command.link_rate.empty()) command.config.link_rate_bps = parse_rate(command.link_rate);
    command.config.bytes = parse_bytes(command.size, "--size");
    if (command.config.ranks < 2) throw InvalidArgument("--ranks must be at least 2");
    if (command.config.ratio < 0) throw InvalidArgument("--ratio must be positive");
    run_model_command(command.config, std::cout);
  });
}

}  // namespace qccl::tools
