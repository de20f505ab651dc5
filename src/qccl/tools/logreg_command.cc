#include "qccl/tools/logreg_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_logreg_experiment(CLI::App& experiment, LogregCommand& command) {
  auto* sub = experiment.add_subcommand(
      "intsgd-logreg",
      "IntSGD Figure 6: IntGD vs IntDIANA vs VR-IntDIANA on logistic regression, data split "
      "across ranks by index");
  auto& c = command.config;
  sub->add_option("--data", c.data,
                  "breast-cancer (default), fashion-mnist[:DIR] (t-shirt vs shirt), libsvm:PATH, "
                  "csv:PATH, synthetic:ROWSxFEATURES");
  sub->add_option("--normalize", c.normalization,
                  "none, unit-rows or standardize (default: standardize for CSV data, unit-rows "
                  "for fashion-mnist, none for libsvm)");
  sub->add_option("--label-column", c.label_column, "csv: 0-based label column, -1 = last (default)");
  sub->add_option("--methods", command.methods,
                  "comma-separated: intgd, intsgd (minibatch), intdiana, vr-intdiana (default: "
                  "intgd,intdiana,vr-intdiana)");
  sub->add_option("--passes", c.passes, "budget in gradient evaluations per sample (default 300)");
  sub->add_option("--max-iterations", c.max_iterations, "iteration cap per method (default 200000)");
  sub->add_option("--wire", c.wire, "int8, int32 or int64 (default int64: no clipping in practice)");
  sub->add_option("--eps", c.epsilon, "safeguard epsilon of the scale (default 0, as Figure 6)");
  sub->add_option("--beta", c.beta, "IntGD/IntSGD moving average beta (default 0.9)");
  sub->add_option("--batch-fraction", c.batch_fraction,
                  "minibatch size as a fraction of the local data (default 0.05)");
  sub->add_option("--lambda", c.lambda, "l2 regularization (default 5/N)");
  sub->add_option("--step", c.step, "step size (default 1/(2 max_l L_l))");
  sub->add_option("--seed", c.seed, "random seed (default 0)");
  sub->add_option("--output", c.output, "directory for intsgd-logreg.{csv,svg,json}");
  add_launch_options(*sub, command.launch);
  return sub;
}

int run_logreg_command(LogregCommand& command, int argc, char** argv) {
  try {
    command.config.methods = split_list(command.methods);
    command.config.algorithm = command.launch.parsed_algorithm();
    command.launch.check();
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.launch, argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_logreg_experiment(comm, command.config);
                        if (comm.rank() == 0) print_logreg_report(std::cout, report);
                      });
}

}  // namespace qccl::tools
