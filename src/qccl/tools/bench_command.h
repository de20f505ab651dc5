// `qccl bench allreduce | allgather | reduce-scatter | broadcast`: the
// collectives in the nccl-tests convention, qccl's algorithms beside MPI's,
// with or without a codec (collective_bench.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "qccl/tools/collective_bench.h"
#include "qccl/tools/launch_options.h"

namespace qccl::tools {

struct BenchCommand {
  BenchConfig config;
  std::string algorithms;
  std::string algo_model;  // --algo auto: the model's coefficients (qccl model --scaling)
  std::string min_bytes = "1K", max_bytes = "64M", chunk_bytes = "1M", host_part_bytes = "2M", link_rate;
  LaunchOptions launch;
  bool json = false;
  bool no_arg_check = false;
};

// Adds `op` under `bench`.
CLI::App* add_bench_operation(CLI::App& bench, BenchOperation op, std::string description,
                              BenchCommand& command);
int run_bench(BenchCommand& command, int argc, char** argv);

}  // namespace qccl::tools
