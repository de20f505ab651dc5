// `qccl bench codec`: each codec's encode, decode and hop-reduce throughput
// beside memcpy, on one thread (codec_bench.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/tools/codec_bench.h"

namespace qccl::tools {

struct CodecBenchCommand {
  CodecBenchConfig config;
  std::string size = "64M";
  bool json = false;
};

CLI::App* add_codec_bench(CLI::App& bench, CodecBenchCommand& command);
int run_codec_bench_command(CodecBenchCommand& command, int argc, char** argv);

}  // namespace qccl::tools
