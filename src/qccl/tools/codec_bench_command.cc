#include "qccl/tools/codec_bench_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/codec_help.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_codec_bench(CLI::App& bench, CodecBenchCommand& command) {
  auto* sub = bench.add_subcommand("codec", "encode/decode/reduce throughput next to memcpy");
  sub->footer(codec_list());
  sub->add_option("--codec", command.config.codecs,
                  "codec spec, repeatable (default: every codec in its common settings)");
  sub->add_option("--size", command.size, "fp32 bytes per call, e.g. 64M (default 64M)");
  sub->add_option("--iters", command.config.iterations, "iterations, medians reported (default 10)");
  sub->add_flag("--json", command.json, "print JSON instead of the table");
  return sub;
}

int run_codec_bench_command(CodecBenchCommand& command, int, char**) {
  try {
    command.config.bytes = parse_bytes(command.size, "--size");
    if (command.config.codecs.empty()) {
      command.config.codecs = {"fp32",      "fp16",       "global-qsgd:bits=8,dither=linear",
                               "global-qsgd:bits=4", "global-qsgd:bits=8,dither=exp",
                               "qsgd",      "terngrad",   "natural",
                               "topk:ef=off", "randk:ef=off", "dgc",
                               "signsgd",   "scaled-sign", "onebit-quantizer",
                               "powersgd"};
    }
    const auto rows = run_codec_bench(command.config);
    if (command.json) {
      std::cout << codec_rows_to_json(command.config, rows).dump(2) << std::endl;
    } else {
      print_codec_table(std::cout, command.config, rows);
    }
    return kExitOk;
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace qccl::tools
