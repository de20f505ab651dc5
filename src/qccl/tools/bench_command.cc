#include "qccl/tools/bench_command.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/tools/auto_algorithm.h"
#include "qccl/tools/bench_report.h"
#include "qccl/tools/host_links_file.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

// The --algo list; `auto` stands as ring until the run resolves it, and
// `auto_at` says where (or is unset).
std::vector<Algorithm> parse_algorithm_list(const std::string& text,
                                            std::optional<std::size_t>& auto_at) {
  std::vector<Algorithm> list;
  for (const auto& item : split_list(text)) {
    if (item == kAutoAlgorithm) {
      if (auto_at) throw InvalidArgument("--algo lists auto twice");
      auto_at = list.size();
      list.push_back(Algorithm::ring);
    } else {
      list.push_back(parse_algorithm(item));
    }
  }
  return list;
}

// The run's algorithms with auto resolved for --max-bytes on `comm`'s
// hosts (collective), a repeat of one already listed left out.
BenchConfig resolve_auto(Communicator& comm, const BenchConfig& config, std::size_t auto_at,
                         const std::string& algo_model) {
  BenchConfig run = config;
  const Algorithm chosen = resolve_auto_algorithm(
      comm, {static_cast<double>(config.max_bytes), config.codec, algo_model}, std::cerr);
  run.algorithms.erase(run.algorithms.begin() + static_cast<std::ptrdiff_t>(auto_at));
  if (std::find(run.algorithms.begin(), run.algorithms.end(), chosen) == run.algorithms.end()) {
    run.algorithms.insert(run.algorithms.begin() + static_cast<std::ptrdiff_t>(auto_at), chosen);
  }
  validate(run);
  return run;
}

}  // namespace

CLI::App* add_bench_operation(CLI::App& bench, BenchOperation op, std::string description,
                              BenchCommand& command) {
  auto* sub = bench.add_subcommand(std::string(to_string(op)), std::move(description));
  // Every algorithm of one level; hierarchical, which needs hosts of
  // several ranks to differ, when asked for.
  std::string default_algorithms;
  for (Algorithm a : algorithms_for(op)) {
    if (a == Algorithm::hierarchical) continue;
    default_algorithms += (default_algorithms.empty() ? "" : ",") + std::string(to_string(a));
  }
  sub->callback([&command, op, default_algorithms] {
    command.config.operation = op;
    if (command.algorithms.empty()) command.algorithms = default_algorithms;
  });
  sub->add_option("--algo", command.algorithms,
                  "comma-separated algorithms (ring, halving-doubling, native; hierarchical for "
                  "allreduce: fp32 within hosts, the codec between them; auto for allreduce: "
                  "the one the model predicts fastest at --max-bytes), measured side by "
                  "side (default: " +
                      default_algorithms + ")");
  sub->add_option("--algo-model", command.algo_model,
                  "--algo auto: the coefficients of `qccl model --scaling --output FILE` "
                  "(default: built in, measured on this project's machine)");
  sub->add_option("--min-bytes", command.min_bytes, "smallest size S in bytes, e.g. 1K (default 1K)");
  sub->add_option("--max-bytes", command.max_bytes, "largest size S in bytes, e.g. 256M (default 64M)");
  sub->add_option("--step-factor", command.config.step_factor, "size multiplier per step (default 2)");
  sub->add_option("--iters", command.config.iterations, "timed iterations per size (default 20)");
  sub->add_option("--warmup", command.config.warmup, "untimed iterations first (default 5)");
  sub->add_flag("--in-place", command.config.in_place, "run in place (allreduce, allgather)");
  sub->add_option("--chunk-bytes", command.chunk_bytes, "pipeline chunk size (default 1M)");
  sub->add_option("--window", command.config.window,
                  "receives in flight; 0 (default): 16 for fp32 chunks, 4 for compressed ones");
  sub->add_option("--host-part-bytes", command.host_part_bytes,
                  "hierarchical allreduce: pipeline part size, 0 for one part (default 2M)");
  sub->add_option("--link-rate", command.link_rate,
                  "each rank's link rate, e.g. 1gbit (scripts/cluster --rate): adds the fraction "
                  "of the wire bound reached");
  sub->add_flag("--json", command.json, "print JSON instead of the table");
  add_launch_options(*sub, command.launch, {.algorithm = ""});  // --algo is a list here
  sub->add_flag("--no-arg-check", command.no_arg_check,
                "skip the per-call check that all ranks pass the same arguments");
  if (op != BenchOperation::broadcast) {
    sub->add_option("--codec", command.config.codec,
                    "compress with this codec spec (e.g. global-qsgd:bits=8,dither=exp) on "
                    "ring/halving-doubling, as a mean (allreduce, reduce-scatter) or as decoded "
                    "shards (allgather); native stays MPI fp32 (default: plain fp32)");
    sub->add_flag("--native-codec", command.config.native_codec,
                  "native runs the codec too, as MPI's collective over its encoding (fp16)");
  }
  return sub;
}

int run_bench(BenchCommand& command, int argc, char** argv) {
  auto& config = command.config;
  const LaunchOptions& launch = command.launch;
  std::optional<std::size_t> auto_at;
  try {
    config.algorithms = parse_algorithm_list(command.algorithms, auto_at);
    if (auto_at && config.operation != BenchOperation::allreduce) {
      throw InvalidArgument("--algo auto chooses among allreduce algorithms only");
    }
    if (auto_at) host_links_or_measured(command.algo_model);  // a bad file fails here
    config.min_bytes = parse_bytes(command.min_bytes, "--min-bytes");
    config.max_bytes = parse_bytes(command.max_bytes, "--max-bytes");
    config.chunk_bytes = parse_bytes(command.chunk_bytes, "--chunk-bytes");
    config.host_part_bytes = parse_bytes(command.host_part_bytes, "--host-part-bytes");
    if (!command.link_rate.empty()) config.link_rate_bps = parse_rate(command.link_rate);
    if (config.chunk_bytes == 0) throw InvalidArgument("--chunk-bytes must be at least 1");
    if (config.window < 0) throw InvalidArgument("--window must be 0 (automatic) or at least 1");
    launch.check();
    validate(config);
    // Each rank holds its input and output and the collective's scratch:
    // about three vectors of --max-bytes.
    const int ranks_here = std::max(launch.ranks, 1);
    check_fits_in_memory(3.0 * static_cast<double>(config.max_bytes) * ranks_here,
                         "--max-bytes " + command.max_bytes +
                             (launch.ranks > 0 ? " with --ranks " + std::to_string(launch.ranks)
                                               : std::string()));
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  CommunicatorOptions options = launch.communicator_options();
  options.check_args = !command.no_arg_check;
  config.between_hosts = launch.parsed_between_hosts();
  return launch_on_ranks(launch.ranks, options, argc, argv,
                         [&](Communicator& comm, const Launch& how) {
                           const BenchConfig run =
                               auto_at ? resolve_auto(comm, config, *auto_at, command.algo_model)
                                       : config;
                           const auto rows = run_collective_bench(comm, run);
                           std::size_t wrong = 0;
                           for (const auto& row : rows) wrong += row.wrong;
                           if (comm.rank() == 0) {
                             const BenchContext context{run, comm.size(), how.transport};
                             if (command.json) {
                               std::cout << to_json(context, rows).dump(2) << std::endl;
                             } else {
                               print_table(std::cout, context, rows);
                               std::cout.flush();
                             }
                           }
                           return wrong == 0 ? kExitOk : kExitWrongResults;
                         },
                         MismatchReport::every_rank);
}

}  // namespace qccl::tools
