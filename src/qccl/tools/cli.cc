#include "qccl/tools/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/tools/bench_report.h"
#include "qccl/tools/codec_bench.h"
#include "qccl/tools/codec_comparison.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/gan_command.h"
#include "qccl/experiments/intsgd/intsgd_experiment.h"
#include "qccl/tools/model_report.h"
#include "qccl/experiments/qgenx/qgenx_experiment.h"
#include "qccl/tools/qsdp_command.h"
#include "qccl/tools/suite_data.h"
#include "qccl/tools/suite_report.h"
#include "qccl/tools/simulate.h"
#include "qccl/tools/step_timeline.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/plan_command.h"
#include "qccl/tools/train_command.h"
#include "qccl/tools/units.h"
#include "qccl/transport/local_transport.h"
#include "qccl/transport/mpi_transport.h"

namespace qccl::tools {
namespace {

// Command-line state of `qccl bench <operation>`.
struct BenchCommand {
  BenchConfig config;
  std::string algorithms;
  std::string min_bytes = "1K", max_bytes = "64M", chunk_bytes = "1M", link_rate;
  int ranks = 0;  // > 0: in-process transport with this many ranks
  bool json = false;
  long timeout_ms = 300000;
  bool no_arg_check = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> list;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) list.push_back(item);
  }
  return list;
}

std::vector<Algorithm> parse_algorithm_list(const std::string& text) {
  std::vector<Algorithm> list;
  for (const auto& item : split_list(text)) list.push_back(parse_algorithm(item));
  return list;
}

void add_bench_operation(CLI::App& bench, BenchOperation op, std::string description,
                         BenchCommand& command) {
  auto* sub = bench.add_subcommand(std::string(to_string(op)), std::move(description));
  std::string default_algorithms;
  for (Algorithm a : algorithms_for(op)) {
    default_algorithms += (default_algorithms.empty() ? "" : ",") + std::string(to_string(a));
  }
  sub->callback([&command, op, default_algorithms] {
    command.config.operation = op;
    if (command.algorithms.empty()) command.algorithms = default_algorithms;
  });
  sub->add_option("--algo", command.algorithms,
                  "comma-separated algorithms, measured side by side (default: " +
                      default_algorithms + ")");
  sub->add_option("--min-bytes", command.min_bytes, "smallest size S in bytes, e.g. 1K (default 1K)");
  sub->add_option("--max-bytes", command.max_bytes, "largest size S in bytes, e.g. 256M (default 64M)");
  sub->add_option("--step-factor", command.config.step_factor, "size multiplier per step (default 2)");
  sub->add_option("--iters", command.config.iterations, "timed iterations per size (default 20)");
  sub->add_option("--warmup", command.config.warmup, "untimed iterations first (default 5)");
  sub->add_flag("--in-place", command.config.in_place, "run in place (allreduce, allgather)");
  sub->add_option("--chunk-bytes", command.chunk_bytes, "pipeline chunk size (default 1M)");
  sub->add_option("--window", command.config.window, "receives in flight (default 4)");
  add_ranks_option(*sub, command.ranks);
  sub->add_option("--link-rate", command.link_rate,
                  "each rank's link rate, e.g. 1gbit (scripts/cluster --rate): adds the fraction "
                  "of the wire bound reached");
  sub->add_flag("--json", command.json, "print JSON instead of the table");
  sub->add_option("--timeout", command.timeout_ms, "bound on every wait, in ms (default 300000)");
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
}

std::string codec_list() {
  std::string text = "codec spec: NAME or NAME:key=value,...; codecs:";
  for (const auto& [name, description] : codec_catalog()) text += "\n  " + name + ": " + description;
  return text;
}

// `qccl bench codec`
struct CodecBenchCommand {
  CodecBenchConfig config;
  std::string size = "64M";
  bool json = false;
};

void add_codec_bench(CLI::App& bench, CodecBenchCommand& command) {
  auto* sub = bench.add_subcommand("codec", "encode/decode/reduce throughput next to memcpy");
  sub->footer(codec_list());
  sub->add_option("--codec", command.config.codecs,
                  "codec spec, repeatable (default: every codec in its common settings)");
  sub->add_option("--size", command.size, "fp32 bytes per call, e.g. 64M (default 64M)");
  sub->add_option("--iters", command.config.iterations, "iterations, medians reported (default 10)");
  sub->add_flag("--json", command.json, "print JSON instead of the table");
}

int run_codec_bench_command(CodecBenchCommand& command) {
  try {
    command.config.bytes = parse_bytes(command.size);
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

// `qccl simulate allreduce`
struct SimulateCommand {
  SimulateConfig config;
  std::string algorithm = "ring";
};

void add_simulate(CLI::App& app, SimulateCommand& command) {
  auto* simulate = app.add_subcommand("simulate", "run codecs on your own data, in one process");
  simulate->require_subcommand(1);
  auto* sub = simulate->add_subcommand(
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
}

int run_simulate_command(SimulateCommand& command) {
  return exit_code_of([&] {
    command.config.algorithm = parse_algorithm(command.algorithm);
    print_summary(std::cout, run_simulation(command.config));
  });
}

// `qccl experiment qgenx-rates`
struct RatesCommand {
  RatesConfig config;
  std::vector<std::string> codecs;
  std::string noises = "absolute,relative";
  std::string algorithm = "ring";
  bool quick = false;
  int ranks = 0;
  long timeout_ms = 300000;
  CLI::App* app = nullptr;
};

// `qccl experiment intsgd-logreg` and `qccl experiment qgenx-rates`
struct ExperimentCommand {
  LogregConfig config;
  std::string methods = "intgd,intdiana,vr-intdiana";
  std::string algorithm = "ring";
  int ranks = 0;
  long timeout_ms = 300000;
  RatesCommand rates;
};

void add_rates_experiment(CLI::App& experiment, RatesCommand& command) {
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
  sub->add_option("--algo", command.algorithm, "ring or halving-doubling (default ring)");
  sub->add_option("--output", c.output, "directory for qgenx-rates.{csv,json,svg}");
  add_ranks_option(*sub, command.ranks);
  sub->add_option("--timeout", command.timeout_ms, "bound on every wait, in ms (default 300000)");
}

int run_rates_command(RatesCommand& command, int argc, char** argv) {
  auto& c = command.config;
  try {
    c.codecs = command.codecs.empty() ? default_rate_codecs() : command.codecs;
    c.noises = split_list(command.noises);
    c.algorithm = parse_algorithm(command.algorithm);
    if (command.quick) {
      if (command.app->get_option("--iterations")->count() == 0) c.iterations = 256;
      if (command.app->get_option("--seeds")->count() == 0) c.seeds = 1;
    }
    if (command.timeout_ms <= 0) throw InvalidArgument("--timeout must be positive");
    validate(c);
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.ranks, Timeout(command.timeout_ms), argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_rates_experiment(comm, c);
                        if (comm.rank() == 0) print_rates_report(std::cout, report);
                      });
}

void add_experiment(CLI::App& app, ExperimentCommand& command, GanCommand& gan,
                    QsdpCommand& qsdp) {
  auto* experiment = app.add_subcommand("experiment", "reproduce the papers' experiments");
  experiment->require_subcommand(1);
  auto* sub = experiment->add_subcommand(
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
  sub->add_option("--algo", command.algorithm, "ring or halving-doubling (default ring)");
  sub->add_option("--output", c.output, "directory for intsgd-logreg.{csv,svg,json}");
  add_ranks_option(*sub, command.ranks);
  sub->add_option("--timeout", command.timeout_ms, "bound on every wait, in ms (default 300000)");
  add_rates_experiment(*experiment, command.rates);
  add_gan_experiment(*experiment, gan);
  add_qsdp_experiment(*experiment, qsdp);
}

int run_experiment_command(ExperimentCommand& command, int argc, char** argv) {
  if (command.rates.app->parsed()) return run_rates_command(command.rates, argc, argv);
  try {
    command.config.methods = split_list(command.methods);
    command.config.algorithm = parse_algorithm(command.algorithm);
    if (command.ranks < 0) throw InvalidArgument("--ranks must be positive");
    if (command.timeout_ms <= 0) throw InvalidArgument("--timeout must be positive");
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.ranks, Timeout(command.timeout_ms), argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_logreg_experiment(comm, command.config);
                        if (comm.rank() == 0) print_logreg_report(std::cout, report);
                      });
}

// `qccl bench report DIR`
void add_report(CLI::App& bench, std::string& directory) {
  auto* sub = bench.add_subcommand(
      "report", "turn a scripts/bench-suite folder into results.md, suite.json and SVG plots");
  sub->add_option("directory", directory, "the suite's results folder")->required();
}

int run_report_command(const std::string& directory) {
  return exit_code_of([&] {
    for (const auto& file : write_suite_report(load_suite(directory), directory)) {
      std::cout << "wrote " << file << "\n";
    }
  });
}

// `qccl bench training-report DIR`
void add_training_report(CLI::App& bench, std::string& directory) {
  auto* sub = bench.add_subcommand(
      "training-report", "turn a scripts/compare-codecs folder into comparison.md, .csv and .svg");
  sub->add_option("directory", directory, "the comparison's results folder")->required();
}

int run_training_report_command(const std::string& directory) {
  return exit_code_of([&] {
    const auto runs = load_comparison(directory);
    for (const auto& file : write_comparison_report(runs, directory)) {
      std::cout << "wrote " << file << "\n";
    }
    std::cout << "\n" << comparison_markdown(runs);
  });
}

// `qccl bench timeline LOG`
struct TimelineCommand {
  std::string log;
  std::size_t skip = 5;
};

void add_timeline(CLI::App& bench, TimelineCommand& command) {
  auto* sub = bench.add_subcommand(
      "timeline", "each bucket's exchange and update in a `qccl train --log` file, medians over "
                  "its steps: which exchange is slow and what the step waits on at the end");
  sub->add_option("log", command.log, "the training log (JSON lines)")->required();
  sub->add_option("--skip", command.skip,
                  "leave out the first N steps taken (default 5; after a MergeComp plan, the "
                  "first N after it; steps skipped for NaN or Inf never count)");
}

int run_timeline_command(const TimelineCommand& command) {
  return exit_code_of([&] {
    print_step_timeline(std::cout, command.log, read_step_timeline(command.log, command.skip));
  });
}

// `qccl model`
struct ModelCommand {
  ModelCommandConfig config;
  std::string link_rate, size = "64M";
};

void add_model(CLI::App& app, ModelCommand& command) {
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
}

int run_model(ModelCommand& command) {
  return exit_code_of([&] {
    if (!command.link_rate.empty()) command.config.link_rate_bps = parse_rate(command.link_rate);
    command.config.bytes = parse_bytes(command.size);
    if (command.config.ranks < 2) throw InvalidArgument("--ranks must be at least 2");
    if (command.config.ratio < 0) throw InvalidArgument("--ratio must be positive");
    run_model_command(command.config, std::cout);
  });
}

// The deepest subcommand the parser entered, for error messages.
const CLI::App* active_command(const CLI::App& app) {
  const CLI::App* current = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : current->get_subcommands()) {
      current = sub;
      deeper = true;
      break;
    }
  }
  return current;
}

std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command; command = command->get_parent()) {
    path = command->get_name() + (path.empty() ? "" : " ") + path;
  }
  return path;
}

std::string valid_options(const CLI::App* command) {
  std::string list;
  for (const CLI::Option* option : command->get_options()) {
    if (option->get_name().empty()) continue;
    list += (list.empty() ? "" : ", ") + option->get_name();
  }
  for (const CLI::App* sub : command->get_subcommands({})) {
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  return list;
}

int run_bench(BenchCommand& command, int argc, char** argv) {
  auto& config = command.config;
  try {
    config.algorithms = parse_algorithm_list(command.algorithms);
    config.min_bytes = parse_bytes(command.min_bytes);
    config.max_bytes = parse_bytes(command.max_bytes);
    config.chunk_bytes = parse_bytes(command.chunk_bytes);
    if (!command.link_rate.empty()) config.link_rate_bps = parse_rate(command.link_rate);
    if (config.chunk_bytes == 0) throw InvalidArgument("--chunk-bytes must be at least 1");
    if (config.window < 1) throw InvalidArgument("--window must be at least 1");
    if (command.timeout_ms <= 0) throw InvalidArgument("--timeout must be positive");
    if (command.ranks < 0) throw InvalidArgument("--ranks must be positive");
    if (command.ranks > 0 && std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
      throw InvalidArgument("--ranks runs ranks as threads of one process; do not combine it "
                            "with mpirun (drop one of the two)");
    }
    validate(config);
    // Each rank holds its input and output and the collective's scratch:
    // about three vectors of --max-bytes.
    const int ranks_here = std::max(command.ranks, 1);
    check_fits_in_memory(3.0 * static_cast<double>(config.max_bytes) * ranks_here,
                         "--max-bytes " + command.max_bytes +
                             (command.ranks > 0 ? " with --ranks " + std::to_string(command.ranks)
                                                : std::string()));
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  const CommunicatorOptions comm_options{Timeout(command.timeout_ms), !command.no_arg_check};

  auto execute = [&](Transport& transport, const std::string& description) {
    Communicator comm(transport, comm_options);
    const auto rows = run_collective_bench(comm, config);
    std::size_t wrong = 0;
    for (const auto& row : rows) wrong += row.wrong;
    if (transport.rank() == 0) {
      const BenchContext context{config, transport.size(), description};
      if (command.json) {
        std::cout << to_json(context, rows).dump(2) << std::endl;
      } else {
        print_table(std::cout, context, rows);
        std::cout.flush();
      }
    }
    return wrong == 0 ? kExitOk : kExitWrongResults;
  };

  if (command.ranks > 0) {
    int code = kExitOk;
    try {
      run_in_process(command.ranks, [&](Transport& transport) {
        const int rank_code = execute(transport, "in-process transport");
        if (transport.rank() == 0) code = rank_code;
      });
    } catch (const std::exception& e) {
      std::cerr << "qccl: error: " << e.what() << "\n";
      return kExitError;
    }
    return code;
  }

  MpiRuntime runtime(&argc, &argv);
  auto transport = runtime.world_transport();
  try {
    return execute(*transport,
                   "mpi transport (thread level " + std::string(runtime.thread_level()) + ")");
  } catch (const std::exception& e) {
    std::cerr << "qccl: error on rank " << transport->rank() << ": " << e.what() << "\n";
    // Take the other ranks down rather than leave them to their timeouts.
    if (transport->size() > 1) transport->abort(e.what());
    return kExitError;
  }
}

// Every command's options, filled in by the parser.
struct Commands {
  BenchCommand bench;
  CodecBenchCommand codec_bench;
  std::string report_directory, training_report_directory;
  TimelineCommand timeline;
  ModelCommand model;
  SimulateCommand simulate;
  ExperimentCommand experiment;
  GanCommand gan;
  QsdpCommand qsdp;
  TrainCommand train, plan;
};

void add_bench_commands(CLI::App& app, Commands& c) {
  auto* bench = app.add_subcommand("bench", "measure collectives in the nccl-tests convention");
  bench->require_subcommand(1);
  add_bench_operation(*bench, BenchOperation::allreduce, "allreduce (ring, halving-doubling, native MPI)", c.bench);
  add_bench_operation(*bench, BenchOperation::allgather,
                      "allgather (ring, halving-doubling, native MPI_Allgather)", c.bench);
  add_bench_operation(*bench, BenchOperation::reduce_scatter,
                      "reduce-scatter (ring, halving-doubling, native MPI_Reduce_scatter_block)",
                      c.bench);
  add_bench_operation(*bench, BenchOperation::broadcast, "broadcast (pipelined binomial tree)", c.bench);
  add_codec_bench(*bench, c.codec_bench);
  add_report(*bench, c.report_directory);
  add_training_report(*bench, c.training_report_directory);
  add_timeline(*bench, c.timeline);
}

void add_commands(CLI::App& app, Commands& c) {
  add_bench_commands(app, c);
  add_model(app, c.model);
  add_simulate(app, c.simulate);
  add_experiment(app, c.experiment, c.gan, c.qsdp);
  add_train(app, c.train);
  add_plan(app, c.plan);
}

// Parses argv (with `train --config FILE` expanded) into `c`; returns an
// exit code when the parse ends the program (help, version, a usage
// error), nothing when a command is to run.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    // `train --config FILE` becomes the options FILE sets (CLI11 parses
    // arguments in reverse order from a vector).
    std::vector<std::string> args(argv + 1, argv + argc);
    args = expand_train_config(args, train_option_names(app));
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --version
  } catch (const InvalidArgument& e) {  // a bad config file
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    const CLI::App* active = active_command(app);
    std::cerr << "qccl: " << e.what() << "\n";
    std::cerr << "valid for '" << command_path(active) << "': " << valid_options(active) << "\n";
    std::cerr << "run '" << command_path(active) << " --help' for details\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// The command the parser entered, by its path: the first entry whose path
// begins the entered one ("qccl bench allreduce" runs "qccl bench").
int dispatch(const CLI::App& app, Commands& c, int argc, char** argv) {
  using Runner = std::function<int()>;
  const std::vector<std::pair<std::string, Runner>> table{
      {"qccl train", [&] { return run_train_command(c.train, argc, argv); }},
      {"qccl plan",
       [&] {
         c.plan.planning = true;
         return run_train_command(c.plan, argc, argv);
       }},
      {"qccl simulate", [&] { return run_simulate_command(c.simulate); }},
      {"qccl experiment qgenx-gan", [&] { return run_gan_command(c.gan, argc, argv); }},
      {"qccl experiment qsdp", [&] { return run_qsdp_command(c.qsdp, argc, argv); }},
      {"qccl experiment", [&] { return run_experiment_command(c.experiment, argc, argv); }},
      {"qccl bench codec", [&] { return run_codec_bench_command(c.codec_bench); }},
      {"qccl bench report", [&] { return run_report_command(c.report_directory); }},
      {"qccl bench training-report",
       [&] { return run_training_report_command(c.training_report_directory); }},
      {"qccl bench timeline", [&] { return run_timeline_command(c.timeline); }},
      {"qccl bench", [&] { return run_bench(c.bench, argc, argv); }},
      {"qccl model", [&] { return run_model(c.model); }},
  };
  const std::string entered = command_path(active_command(app)) + " ";
  for (const auto& [path, run] : table) {
    if (entered.rfind(path + " ", 0) == 0) return run();
  }
  return kExitUsage;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "qccl: compressed collectives for communication-efficient distributed training.\n"
      "Run under mpirun (one rank per process) or with --ranks N (ranks as threads).",
      "qccl"};
  app.set_version_flag("--version", std::string("qccl ") + QCCL_VERSION);
  app.require_subcommand(1);
  Commands commands;
  add_commands(app, commands);
  if (const auto code = parse(app, argc, argv)) return *code;
  return dispatch(app, commands, argc, argv);
}

}  // namespace qccl::tools
