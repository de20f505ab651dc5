#include "qccl/tools/codecs_command.h"

#include <iostream>

#include "qccl/collectives/options.h"
#include "qccl/common/errors.h"
#include "qccl/tools/codec_help.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

CLI::App* add_codecs(CLI::App& app, CodecsCommand& command) {
  auto* sub = app.add_subcommand(
      "codecs", "the codec catalogue: each codec's properties (unbiased, how it is summed, "
                "bits per element, error bounds) and the papers' recommended settings");
  sub->footer(codec_list());
  sub->add_option("--codec", command.specs,
                  "show these specs instead of the recommended settings (repeatable)")
      ->take_all();
  sub->add_option("--ranks", command.query.ranks,
                  "the number of ranks the bounds are for (default 4)");
  sub->add_option("--elements", command.query.elements,
                  "elements per rank the sizes and bounds are for (default 1048576)");
  sub->add_option("--algo", command.algorithm,
                  "ring (default) or halving-doubling: the bounds of some codecs depend on it");
  sub->add_flag("--json", command.json, "print JSON instead of the table");
  return sub;
}

int run_codecs_command(CodecsCommand& command, int, char**) {
  return exit_code_of([&] {
    command.query.algorithm = parse_algorithm(command.algorithm);
    if (command.query.algorithm == Algorithm::native) {
      throw InvalidArgument("--algo native is MPI's own allreduce, which runs fp32 and fp16 only; "
                            "the codecs' bounds are for ring or halving-doubling");
    }
    const auto rows = codec_catalogue(command.specs, command.query);
    if (command.json) {
      std::cout << codec_catalogue_json(rows, command.query).dump(2) << std::endl;
    } else {
      print_codec_catalogue(std::cout, rows, command.query);
    }
  });
}

}  // namespace qccl::tools
