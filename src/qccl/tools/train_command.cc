#include "qccl/tools/train_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/common/readable_file.h"
#include "qccl/training/train_output.h"
#include "qccl/models/model_config.h"
#include "qccl/tools/auto_algorithm.h"
#include "qccl/tools/codec_help.h"
#include "qccl/tools/host_links_file.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/plan_report.h"
#include "qccl/tools/ranks.h"
#include "qccl/tools/text_table.h"
#include "qccl/tools/train_memory_check.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

CLI::App* add_train(CLI::App& app, TrainCommand& command) {
  auto* sub = app.add_subcommand(
      "train", "training with compressed exchanges: data parallel or sharded (libtorch)");
  add_train_options(*sub, command, TrainOptionSet::train);
  sub->footer(codec_list());
  return sub;
}

namespace {

// train's options come in the groups its --help shows, in this order; plan
// takes the subset that shapes a profile (TrainOptionSet::plan): it never
// checkpoints, always plans MergeComp buckets and runs data parallel.
constexpr const char* kModelGroup = "Model and data";
constexpr const char* kOptimizerGroup = "Optimizer and schedule";
constexpr const char* kCodecGroup = "Codec and exchange";
constexpr const char* kEngineGroup = "Engine and ranks";
constexpr const char* kBucketGroup = "Buckets and planning";
constexpr const char* kRunGroup = "Checkpoints and run control";
constexpr const char* kOutputGroup = "Output";

void add_model_options(CLI::App& sub, TrainCommand& command) {
  auto& c = command.config;
  sub.option_defaults()->group(kModelGroup);
  sub.add_option("--model", c.model, "mlp, cnn (default), resmlp (102 tensors), char-lstm, gpt (a small GPT-style decoder) or "
                 "recommender");
  sub.add_option("--data", c.data,
                 "fashion-mnist (mlp, cnn, resmlp), fortunes (char-lstm, gpt) or clicks (recommender); "
                 "default: the model's");
  sub.add_option("--data-dir", c.data_dir,
                 "dataset directory (default /usr/share/datasets/fashion-mnist or "
                 "/usr/share/games/fortunes)");
  sub.add_option("--sequence-length", c.sequence_length, "char-lstm, gpt: characters per sample (64)");
  sub.add_option("--hidden", c.hidden, "char-lstm: LSTM width; gpt: model width (256)");
  sub.add_option("--layers", c.layers, "gpt: transformer blocks (4)");
  sub.add_option_function<std::string>(
      "--gpt-outliers", [&c](const std::string& text) { set_gpt_outliers(c, text); },
      "gpt: ROWS:SCALE, that many rows of every block's linear weights made SCALE times larger "
      "at initialisation (default none)");
  sub.add_option("--fields", c.fields, "recommender: categorical fields (8)");
  sub.add_option("--values-per-field", c.values_per_field,
                 "recommender: rows of each embedding table (100000)");
  sub.add_option("--click-samples", c.click_samples, "recommender: training samples (200000)");
  sub.add_option("--seed", c.seed, "seed of initialisation, data order and codecs (default 1)");
}

void add_optimizer_options(CLI::App& sub, TrainCommand& command) {
  auto& c = command.config;
  sub.option_defaults()->group(kOptimizerGroup);
  sub.add_option("--optimizer", c.optimizer, "sgd (default), adam or adamw");
  sub.add_option("--lr", c.lr, "learning rate (default 0.05)");
  sub.add_option("--lr-schedule", c.lr_schedule,
                 "constant (default), cosine or linear decay to 0 over the run");
  sub.add_option("--warmup-steps", c.warmup_steps,
                 "linear warm-up from lr/N to lr over the first N steps (default 0)");
  sub.add_option("--momentum", c.momentum, "SGD momentum (default 0.9)");
  sub.add_option("--weight-decay", c.weight_decay, "weight decay (default 0)");
  sub.add_option("--beta1", c.beta1, "Adam beta1 (default 0.9)");
  sub.add_option("--beta2", c.beta2, "Adam beta2 (default 0.999)");
  sub.add_option("--eps", c.eps, "Adam epsilon (default 1e-8)");
  sub.add_option("--embedding-optimizer", c.embedding_optimizer,
                 "embedding tables with sparse gradients: dense (default: as --optimizer, every "
                 "row), lazy-adam (only the rows a step touched; PyTorch's SparseAdam) or "
                 "rowwise-adagrad (one accumulator per row); adam/adamw only");
  sub.add_option("--embedding-lr", c.embedding_lr,
                 "learning rate of the embedding tables (default: --lr), scheduled like it");
  sub.add_option("--epochs", c.epochs, "epochs (default 1)");
  sub.add_option("--batch", c.batch, "samples per rank per step (default 64)");
  sub.add_option("--max-steps-per-epoch", c.max_steps_per_epoch,
                 "cap on steps per epoch (default 0: the whole training set)");
}

void add_codec_options(CLI::App& sub, TrainCommand& command, TrainOptionSet set) {
  sub.option_defaults()->group(kCodecGroup);
  if (set == TrainOptionSet::train) {
    sub.add_option("--codec", command.codecs,
                   "the gradients' codec spec (default fp32; sharded: minmax:bits=8; the list "
                   "below, `qccl codecs` for their properties); repeat to train once per codec "
                   "and compare")
        ->take_all();
    sub.add_option("--weights-codec", command.weights_codec,
                   "sharded: the codec of the gathered weights (default "
                   "minmax:bits=8,rounding=shift)");
  } else {
    sub.add_option("--codec", command.codecs,
                   "the gradients' codec spec (default fp32; the list below, `qccl codecs` for "
                   "their properties); repeat to plan once per codec")
        ->take_all();
  }
  sub.add_option("--algo", command.launch.algorithm,
                 "ring (default), halving-doubling (or tree), native (fp32/fp16 via MPI), "
                 "hierarchical (fp32 within hosts, the codec between them; see --ranks-per-host) "
                 "or auto (the one the model predicts fastest for a bucket, logged)");
  sub.add_option("--algo-model", command.algo_model,
                 "--algo auto: the coefficients of `qccl model --scaling --output FILE` "
                 "(default: built in, measured on this project's machine)");
  sub.add_flag("--dense-embeddings", command.dense_embeddings,
               "recommender: embedding gradients as dense tensors (default: sparse rows)");
  if (set == TrainOptionSet::train) {
    sub.add_flag("--no-overlap-updates", command.no_overlap_updates,
                 "take the optimizer step after the last bucket's exchange, not bucket by bucket "
                 "as each bucket's means arrive (the same results; for measuring the overlap)");
  }
}

void add_engine_options(CLI::App& sub, TrainCommand& command, TrainOptionSet set) {
  auto& c = command.config;
  sub.option_defaults()->group(kEngineGroup);
  if (set == TrainOptionSet::train) {
    sub.add_option("--engine", c.engine,
                   "data-parallel (default: replicas, gradient buckets) or sharded (QSDP: each "
                   "rank owns 1/n of every parameter; weights gathered per block)");
  }
  add_launch_options(sub, command.launch, {.algorithm = ""});  // --ranks, --timeout
  sub.option_defaults()->group(kEngineGroup);
  sub.add_option("--threads", c.threads, "libtorch threads per rank (default 1)");
}

void add_bucket_options(CLI::App& sub, TrainCommand& command, TrainOptionSet set) {
  auto& c = command.config;
  sub.option_defaults()->group(kBucketGroup);
  if (set == TrainOptionSet::train) {
    sub.add_option("--buckets", c.buckets,
                   "which gradients are reduced together: ddp (default: DDP's size caps), "
                   "layerwise, one, groups:N1,N2,.. (tensor counts, last layers first) or "
                   "mergecomp (profiled, then searched)");
  }
  sub.add_option("--bucket-cap", command.bucket_cap, "bucket size cap (default 25M)");
  sub.add_option("--first-bucket", command.first_bucket, "first bucket's cap (default 1M)");
  sub.add_option("--plan-steps", c.plan_steps,
                 "mergecomp: steps profiled before planning, the first not counted (default 5)");
  sub.add_option("--plan-groups", c.plan_max_groups,
                 "mergecomp: most groups searched, Algorithm 2's Y (default 2)");
  sub.add_option("--plan-alpha", c.plan_alpha,
                 "mergecomp: stop adding groups that gain less than this share, α (default 0.01)");
  if (set == TrainOptionSet::plan) {
    sub.add_option("--link-rate", command.link_rate,
                   "plan for links of this rate (e.g. 1gbit, 10gbit) instead of the measured one");
  }
}

// Checkpoints, failures and checks of a training run (plan has none).
void add_run_options(CLI::App& sub, TrainCommand& command) {
  auto& c = command.config;
  sub.option_defaults()->group(kRunGroup);
  // Read before parsing (expand_train_config); declared for --help only.
  sub.add_option("--config", command.config_file,
                 "read options from a TOML-style file (the command line wins)");
  sub.add_option("--checkpoint-dir", c.checkpoint_dir, "write checkpoints here");
  sub.add_option("--checkpoint-every", c.checkpoint_every,
                 "checkpoint every K steps (default 0: at the end only)");
  sub.add_flag("--resume", c.resume, "continue from the checkpoint in --checkpoint-dir");
  sub.add_option("--stop-after", c.stop_after_steps,
                 "stop after N steps of this invocation (saving a checkpoint if "
                 "--checkpoint-dir is set), to --resume later");
  sub.add_flag("--skip-nonfinite", c.skip_nonfinite,
               "skip steps whose gradients hold NaN/Inf instead of stopping");
  sub.add_option("--max-skipped-consecutive", c.max_skipped_consecutive,
                 "with --skip-nonfinite: stop when more steps than this are skipped in a row "
                 "(default 3)");
  sub.add_option("--max-skipped-total", c.max_skipped_total,
                 "with --skip-nonfinite: stop when more steps than this are skipped in all "
                 "(default 10)");
  sub.add_option("--verify-every", c.verify_every,
                 "compare the replicas' parameters across ranks every K steps (default 100; "
                 "0: only after a resume, at checkpoints and at the end)");
}

void add_output_options(CLI::App& sub, TrainCommand& command, TrainOptionSet set) {
  auto& c = command.config;
  sub.option_defaults()->group(kOutputGroup);
  sub.add_option("--log", c.log_path,
                 "JSON-lines log of every metric (several codecs: one file each, named after "
                 "the codec, printed at the start)");
  sub.add_option("--summary-json", command.summary_json, "write the summaries as JSON");
  sub.add_flag("--force", c.force,
               set == TrainOptionSet::train ? "replace an existing log, summary or checkpoint"
                                            : "replace an existing log or summary");
  sub.add_flag("--quiet", command.launch.quiet,
               set == TrainOptionSet::train ? "no progress bar or per-epoch lines"
                                            : "no progress lines");
}

}  // namespace

void add_train_options(CLI::App& app, TrainCommand& command, TrainOptionSet set) {
  // An option given twice (in the config file, then on the command line)
  // takes the last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_model_options(app, command);
  add_optimizer_options(app, command);
  add_codec_options(app, command, set);
  add_engine_options(app, command, set);
  add_bucket_options(app, command, set);
  if (set == TrainOptionSet::train) add_run_options(app, command);
  add_output_options(app, command, set);
}

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::string unquoted(const std::string& text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

// The options one `key = value` line stands for.
std::vector<std::string> options_of_line(const std::string& key, const std::string& value) {
  const std::string option = "--" + key;
  if (value == "true") return {option};
  if (value == "false") return {};
  if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
    std::vector<std::string> out;
    std::string item;
    bool quoted = false;
    for (const char ch : value.substr(1, value.size() - 2)) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) {
        if (!trimmed(item).empty()) out.insert(out.end(), {option, unquoted(trimmed(item))});
        item.clear();
      } else {
        item += ch;
      }
    }
    if (!trimmed(item).empty()) out.insert(out.end(), {option, unquoted(trimmed(item))});
    return out;
  }
  return {option, unquoted(value)};
}

std::vector<std::string> read_train_config(const std::string& path,
                                           const std::vector<std::string>& known) {
  try {
    check_readable_file(path);  // a regular file: never a directory, FIFO or device
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--config: ") + e.what());
  }
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read the config file '" + path + "'");
  std::vector<std::string> options;
  std::map<std::string, int> first_line;  // key -> the line that set it
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {  // strip a comment outside quotes
      if (line[i] == '"') quoted = !quoted;
      if (line[i] == '#' && !quoted) {
        line.resize(i);
        break;
      }
    }
    line = trimmed(line);
    if (line.empty() || line == "[train]") continue;
    const auto equals = line.find('=');
    const std::string key = equals == std::string::npos ? "" : trimmed(line.substr(0, equals));
    const std::string value = equals == std::string::npos ? "" : trimmed(line.substr(equals + 1));
    if (key.empty() || value.empty() || key.find_first_of(" \t\"") != std::string::npos ||
        key == "config") {
      throw InvalidArgument("config file '" + path + "', line " + std::to_string(number) +
                            ": expected `option = value`, got `" + line + "`");
    }
    const std::string where = "config file '" + path + "', line " + std::to_string(number);
    if (!known.empty() && std::find(known.begin(), known.end(), key) == known.end()) {
      throw InvalidArgument(where + ": unknown option '" + key +
                            "'; `qccl train --help` lists the valid ones");
    }
    if (const auto [it, added] = first_line.emplace(key, number); !added) {
      throw InvalidArgument(where + ": '" + key + "' is set again (first on line " +
                            std::to_string(it->second) +
                            "); set it once, with [\"a\", \"b\"] for an option that repeats");
    }
    const auto more = options_of_line(key, value);
    options.insert(options.end(), more.begin(), more.end());
  }
  return options;
}

}  // namespace

std::vector<std::string> train_option_names(const CLI::App& app) {
  std::vector<std::string> names;
  const auto* train = app.get_subcommand("train");
  for (const auto* option : train->get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back(name);
  }
  return names;
}

std::vector<std::string> expand_train_config(const std::vector<std::string>& args,
                                             const std::vector<std::string>& options) {
  std::vector<std::string> out;
  std::vector<std::string> from_file;
  bool in_train = false;
  std::size_t insert_at = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!in_train && args[i] == "train") {
      in_train = true;
      out.push_back(args[i]);
      insert_at = out.size();
      continue;
    }
    if (in_train && (args[i] == "--config" || args[i].rfind("--config=", 0) == 0)) {
      std::string path;
      if (args[i] == "--config") {
        if (i + 1 >= args.size()) throw InvalidArgument("--config needs a file name");
        path = args[++i];
      } else {
        path = args[i].substr(9);
      }
      from_file = read_train_config(path, options);
      continue;
    }
    out.push_back(args[i]);
  }
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(insert_at), from_file.begin(), from_file.end());
  return out;
}

std::string path_for_codec(const std::string& path, const std::string& codec, std::size_t count) {
  if (path.empty() || count <= 1) return path;
  std::string name;
  for (const char ch : codec) {
    const bool plain = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    if (plain) name += ch;
    else if (!name.empty() && name.back() != '-') name += '-';
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  const std::filesystem::path p(path);
  if (!p.has_extension()) return path + "." + name;
  return (p.parent_path() / (p.stem().string() + "." + name + p.extension().string())).string();
}

namespace {

std::string format_bytes(double bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (bytes >= 1 << 20) out << bytes / (1 << 20) << " MiB";
  else out << bytes / 1024 << " KiB";
  return out.str();
}

}  // namespace

namespace {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// The summary table's columns: the result, then the training thread's step
// split, the communication thread's, and the bytes of a step.
TextTable summary_table(bool perplexity) {
  using A = TextTable::Align;
  const std::string training = "training thread, ms/step", comm = "comm thread, ms/step";
  const std::string bytes = "per step";
  return TextTable({{"codec", A::left, ""},
                    {perplexity ? "perplexity" : "accuracy", A::right, ""},
                    {"wall s", A::right, ""},
                    {"steps/s", A::right, ""},
                    {"data", A::right, training},
                    {"compute", A::right, training},
                    {"wait", A::right, training},
                    {"optim", A::right, training},
                    {"encode", A::right, comm},
                    {"comm", A::right, comm},
                    {"decode", A::right, comm},
                    {"payload", A::right, bytes},
                    {"sent", A::right, bytes},
                    {"ratio", A::right, bytes},
                    {"faults", A::right, bytes}});
}

std::vector<std::string> summary_row(const engines::TrainSummary& r, bool perplexity) {
  const auto ms = [](double s) { return fixed(s * 1e3, 2); };
  return {r.codec,
          fixed(r.final_metric, perplexity ? 3 : 4),
          fixed(r.wall_seconds, 1),
          fixed(r.steps_per_second, 1),
          ms(r.split.data),
          ms(r.split.compute),
          ms(r.split.waiting),
          ms(r.split.optimizer),
          ms(r.split.encode),
          ms(r.split.communicate),
          ms(r.split.decode),
          format_bytes(r.payload_bytes_per_step),
          r.sent_bytes_per_step ? format_bytes(*r.sent_bytes_per_step) : std::string("(MPI)"),
          fixed(r.compression_ratio, 1) + "x",
          fixed(static_cast<double>(r.split.faults + r.split.communication_faults), 0)};
}

}  // namespace

void print_train_summaries(std::ostream& out, const std::vector<engines::TrainSummary>& runs) {
  if (runs.empty()) return;
  const auto& first = runs.front();
  out << "\n" << first.model << " on " << first.data << ", " << first.ranks << " ranks, "
      << first.parameters << " parameters";
  if (!first.weights_codec.empty()) {  // the engine gathers weights: sharded
    out << ", sharded in " << first.buckets << " groups; weights " << first.weights_codec
        << "; peak memory " << format_bytes(static_cast<double>(first.peak_rss_bytes))
        << " (largest process)\n";
  } else {
    out << " in " << first.buckets << " bucket(s)\n";
  }
  const bool perplexity = first.metric_name == "perplexity";
  auto table = summary_table(perplexity);
  for (const auto& r : runs) table.add_row(summary_row(r, perplexity));
  table.print(out);
  for (const auto& r : runs) {
    if (r.skipped_steps > 0) out << r.codec << ": " << r.skipped_steps << " steps skipped (NaN/Inf)\n";
  }
  out << "training thread: data + compute + wait + optim = one step. comm thread: time per step spent\n"
         "encoding, communicating and decoding buckets, overlapping compute. payload: one rank's encoded\n"
         "gradient per step (sharded: also its weight shards, once per gather). sent: bytes rank 0 sent\n"
         "per step. faults: minor page faults per step on rank 0, both threads (0 once buffers are reused).\n";
}

namespace {

// With several codecs each run writes its own log and checkpoints, named
// after the codec (path_for_codec): say which file is whose before the
// first run starts.
template <typename ConfigFor>
void print_output_names(std::ostream& out, const std::vector<std::string>& codecs,
                        const ConfigFor& config_for) {
  for (std::size_t k = 0; k < codecs.size(); ++k) {
    const auto config = config_for(k);
    if (!config.log_path.empty()) out << "log of " << codecs[k] << ": " << config.log_path << "\n";
    if (!config.checkpoint_dir.empty()) {
      out << "checkpoints of " << codecs[k] << ": " << config.checkpoint_dir << "\n";
    }
  }
}

}  // namespace

int run_train_command(TrainCommand& command, int argc, char** argv) {
  auto& c = command.config;
  std::vector<CodecSpec> specs;  // one per --codec, parsed once
  try {
    const auto defaults = engines::default_codecs(c.engine);
    if (command.codecs.empty()) command.codecs.push_back(defaults.gradients);
    c.weights_codec =
        CodecSpec::parse(command.weights_codec.empty() ? defaults.weights : command.weights_codec);
    if (c.data.empty()) c.data = engines::dataset_for_model(c.model);
    const bool auto_algorithm = command.launch.algorithm == kAutoAlgorithm;
    c.algorithm = auto_algorithm ? Algorithm::ring : command.launch.parsed_algorithm();
    if (auto_algorithm) host_links_or_measured(command.algo_model);  // a bad file fails here
    c.between_hosts = command.launch.parsed_between_hosts();
    c.bucket_cap_bytes = parse_bytes(command.bucket_cap, "--bucket-cap");
    c.first_bucket_bytes = parse_bytes(command.first_bucket, "--first-bucket");
    c.progress = !command.launch.quiet;
    c.overlap_updates = !command.no_overlap_updates;
    c.sparse_embeddings = !command.dense_embeddings;
    if (command.planning) {
      c.buckets = "mergecomp";
      c.plan_only = true;
      if (!command.link_rate.empty()) c.plan_link_rate = parse_rate(command.link_rate) / 8;
    }
    command.launch.check();
    for (const auto& codec : command.codecs) {
      auto one = c;
      one.codec = specs.emplace_back(CodecSpec::parse(codec));
      engines::validate(one);
    }
    check_training_fits(c, command.launch);
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_on_ranks(command.launch, argc, argv,
                      [&](Communicator& comm) {
    std::vector<engines::TrainSummary> runs;
    const bool root = comm.rank() == 0;
    // Run k's settings: its codec, and its own log and checkpoints when
    // several codecs run (named after the codec as given).
    // --algo auto: each codec's algorithm for one bucket's allreduce.
    std::vector<Algorithm> algorithms(specs.size(), c.algorithm);
    if (command.launch.algorithm == kAutoAlgorithm) {
      const double bucket = std::min(4.0 * static_cast<double>(engines::parameter_count_bound(c)),
                                     static_cast<double>(c.bucket_cap_bytes));
      for (std::size_t k = 0; k < specs.size(); ++k) {
        // The sharded engine runs no hierarchical exchange.
        algorithms[k] = resolve_auto_algorithm(
            comm, {bucket, specs[k].text(), command.algo_model, c.engine != "sharded"}, std::cerr);
      }
    }
    const auto config_for = [&](std::size_t k) {
      auto one = c;
      one.codec = specs[k];
      one.algorithm = algorithms[k];
      const std::string& given = command.codecs[k];
      one.log_path = path_for_codec(c.log_path, given, command.codecs.size());
      one.checkpoint_dir = path_for_codec(c.checkpoint_dir, given, command.codecs.size());
      return one;
    };
    // Every output of every codec's run, before the first one starts.
    std::vector<engines::OutputPath> outputs;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const auto more = engines::outputs_of(config_for(k));
      outputs.insert(outputs.end(), more.begin(), more.end());
    }
    if (!command.summary_json.empty()) {
      outputs.push_back({command.summary_json, "--summary-json",
                         engines::OutputPath::Kind::replaced, false});
    }
    engines::check_outputs(comm, outputs);
    if (root && specs.size() > 1) print_output_names(std::cerr, command.codecs, config_for);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      if (root && specs.size() > 1 && !command.launch.quiet) std::cerr << "== " << specs[k].text() << "\n";
      runs.push_back(engines::train(comm, config_for(k)));
    }
    if (!root) return;
    if (command.planning) print_plans(std::cout, runs);
    else print_train_summaries(std::cout, runs);
    if (!command.summary_json.empty()) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& r : runs) all.push_back(engines::summary_json(r));
      write_file_atomically(command.summary_json, all.dump(2) + "\n");
    }
  });
}

}  // namespace qccl::tools
