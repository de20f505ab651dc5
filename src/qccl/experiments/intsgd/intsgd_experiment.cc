#include "qccl/experiments/intsgd/intsgd_experiment.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/codecs/quantizers/intsgd.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/estimators.h"
#include "qccl/experiments/intsgd/logistic.h"
#include "qccl/experiments/intsgd/readers.h"
#include "qccl/experiments/intsgd/synthetic.h"
#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::tools {
namespace {

using convex::Dataset;
using convex::LogisticObjective;
using convex::Normalization;

constexpr const char* kBreastCancer =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";
constexpr const char* kMethods[] = {"intgd", "intsgd", "intdiana", "vr-intdiana"};

std::size_t parse_count(std::string_view text, const std::string& what) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0) {
    throw InvalidArgument(what + ": '" + std::string(text) + "' is not a positive integer");
  }
  return value;
}

// The data set and its default normalization, from the --data text.
Dataset load(const LogregConfig& config, std::string& description) {
  const std::string& spec = config.data;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string argument = colon == std::string::npos ? "" : spec.substr(colon + 1);
  Dataset data;
  Normalization normalization = Normalization::none;
  if (kind == "breast-cancer") {
    const std::string path = argument.empty() ? kBreastCancer : argument;
    data = convex::read_csv(path, -1);
    data.binarize_labels(path);
    normalization = Normalization::standardize;
    description = "breast-cancer (" + path + ")";
  } else if (kind == "fashion-mnist") {
    // T-shirt/top (0) against shirt (6): the hardest pair to tell apart.
    const std::string dir = argument.empty() ? kFashionMnist : argument;
    data = convex::read_fashion_mnist_pair(dir, 0, 6);
    normalization = Normalization::unit_rows;
    description = "fashion-mnist t-shirt vs shirt (" + dir + ")";
  } else if (kind == "libsvm" && !argument.empty()) {
    data = convex::read_libsvm(argument);
    data.binarize_labels(argument);
    description = "libsvm " + argument;
  } else if (kind == "csv" && !argument.empty()) {
    data = convex::read_csv(argument, config.label_column);
    data.binarize_labels(argument);
    normalization = Normalization::standardize;
    description = "csv " + argument;
  } else if (kind == "synthetic") {
    const auto x = argument.find('x');
    if (x == std::string::npos) {
      throw InvalidArgument("--data synthetic:ROWSxFEATURES, e.g. synthetic:5000x200");
    }
    data = convex::make_synthetic(parse_count(argument.substr(0, x), "--data rows"),
                                  parse_count(argument.substr(x + 1), "--data features"),
                                  config.seed);
    description = "synthetic " + argument + " (seed " + std::to_string(config.seed) + ")";
  } else {
    throw InvalidArgument("unknown --data '" + spec + "'; valid: breast-cancer, fashion-mnist[:DIR], "
                          "libsvm:PATH, csv:PATH, synthetic:ROWSxFEATURES");
  }
  if (!config.normalization.empty()) normalization = convex::parse_normalization(config.normalization);
  convex::normalize(data, normalization);
  description += ", " + convex::to_string(normalization);
  return data;
}

// One iteration's record (rank 0).
struct Record {
  std::size_t iteration;
  double grads_per_sample, objective;
  std::uint64_t largest_sent, largest_sum, clipped;
};

// The ranks' per-iteration numbers in one MAX allreduce: rank r fills slots
// [4r, 4r+4) = (f_r(x), #grad, clipped, largest sent) and leaves the others 0.
struct RankMetrics {
  double objective = 0, cost = 0, clipped = 0;
  std::uint64_t largest_sent = 0;
};

RankMetrics combine(Communicator& comm, const RankMetrics& mine) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<double> slots(4 * n, 0.0);
  const auto r = static_cast<std::size_t>(comm.rank());
  slots[4 * r] = mine.objective;
  slots[4 * r + 1] = mine.cost;
  slots[4 * r + 2] = mine.clipped;
  slots[4 * r + 3] = static_cast<double>(mine.largest_sent);
  Fingerprint fingerprint("experiment metrics");
  fingerprint.add("values", static_cast<std::int64_t>(slots.size()));
  const Timeout timeout = comm.timeout(std::nullopt);
  run_collective(comm, fingerprint, timeout, [&](int) {
    allreduce_values<double>(comm.transport(), slots, ReduceOp::max, timeout);
  });
  RankMetrics total;
  for (std::size_t i = 0; i < n; ++i) {
    total.objective += slots[4 * i] / static_cast<double>(n);
    total.cost += slots[4 * i + 1];
    total.clipped += slots[4 * i + 2];
    total.largest_sent = std::max(total.largest_sent, static_cast<std::uint64_t>(slots[4 * i + 3]));
  }
  return total;
}

std::string codec_spec_for(const std::string& method, const LogregConfig& config) {
  const std::string common = "wire=" + config.wire + ",eps=" + format_number(config.epsilon);
  if (method == "intgd" || method == "intsgd") {
    return "intsgd:" + common + ",beta=" + format_number(config.beta);
  }
  return "intdiana:" + common + ",beta=0";
}

// One method from x_0 = 0 until the #grad budget is spent: estimate g_i,
// aggregate with the integer codec (fp64 path), x ← x − η·g, and tell the
// codec the update (its α for the next step).
std::vector<Record> run_method(Communicator& comm, const std::string& method,
                               const LogisticObjective& local, std::size_t total_samples,
                               double step, std::size_t method_index, const LogregConfig& config) {
  const std::size_t m = local.samples();
  const std::size_t batch =
      std::max<std::size_t>(1, static_cast<std::size_t>(config.batch_fraction * static_cast<double>(m)));
  std::unique_ptr<convex::GradientEstimator> estimator;
  if (method == "intgd" || method == "intdiana") {
    estimator = convex::make_full_gradient(local);
  } else if (method == "intsgd") {
    estimator = convex::make_minibatch_gradient(local, batch, config.seed, comm.rank());
  } else {
    estimator = convex::make_lsvrg_gradient(local, batch, static_cast<double>(batch) / m,
                                            config.seed, comm.rank());
  }
  auto codec = make_integer_codec(codec_spec_for(method, config),
                                  {.seed = config.seed, .bucket = method_index});
  CollectiveOptions options;
  options.algorithm = config.algorithm;

  const std::size_t d = local.dimension();
  std::vector<double> x(d, 0.0), g(d), update(d);
  std::vector<Record> records;
  double spent = 0;
  RankMetrics mine;
  for (std::size_t k = 0;; ++k) {
    mine.objective = local.value(x);
    const RankMetrics total = combine(comm, mine);
    spent += total.cost;
    const double grads_per_sample = spent / static_cast<double>(total_samples);
    records.push_back({k, grads_per_sample, total.objective, total.largest_sent,
                       codec->last_step_stats().largest_sum,
                       static_cast<std::uint64_t>(total.clipped)});
    if (grads_per_sample >= config.passes || k >= config.max_iterations) break;
    mine.cost = static_cast<double>(estimator->estimate(x, k, g));
    codec->allreduce_mean(comm, std::span<double>(g), options);
    const auto stats = codec->last_step_stats();
    mine.clipped = static_cast<double>(stats.clipped);
    mine.largest_sent = stats.largest_sent;
    for (std::size_t j = 0; j < d; ++j) {
      update[j] = -step * g[j];
      x[j] += update[j];
    }
    codec->observe_step(step, std::span<const double>(update));
  }
  return records;
}

LogregMethodSummary summarize(const std::string& method, const std::string& codec,
                              const std::vector<Record>& records, double f_star) {
  LogregMethodSummary s;
  s.method = method;
  s.codec = codec;
  s.iterations = records.back().iteration;
  s.grads_per_sample = records.back().grads_per_sample;
  s.final_gap = records.back().objective - f_star;
  const std::size_t late_from = records.size() - std::max<std::size_t>(1, records.size() / 10);
  for (std::size_t i = 0; i < records.size(); ++i) {
    s.largest_sent = std::max(s.largest_sent, records[i].largest_sent);
    s.largest_sum = std::max(s.largest_sum, records[i].largest_sum);
    s.clipped += records[i].clipped;
    if (i >= late_from) s.largest_sent_late = std::max(s.largest_sent_late, records[i].largest_sent);
  }
  return s;
}

void write_outputs(const LogregConfig& config, LogregReport& report,
                   const std::vector<std::vector<Record>>& runs) {
  std::filesystem::create_directories(config.output);
  const std::string base = config.output + "/intsgd-logreg";
  std::ostringstream csv;
  csv << "method,iteration,grads_per_sample,objective,objective_gap,largest_sent,largest_sum,"
         "bits_sent,clipped\n";
  csv << std::setprecision(17);
  std::vector<PlotPanel> panels(2);
  const std::string x_label = "gradients per sample, #grad / (m n)";
  panels[0] = {"objective gap, " + std::to_string(report.ranks) + " ranks", x_label, "f(x) - f*",
               true, false, {}};
  panels[1] = {"largest integer sent by a rank", x_label, "max |Q(g_i)|", true, false, {}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string& method = report.methods[i].method;
    PlotSeries gap{method, {}}, sent{method, {}};
    for (const auto& r : runs[i]) {
      const double g = r.objective - report.f_star;
      csv << method << "," << r.iteration << "," << r.grads_per_sample << "," << r.objective << ","
          << g << "," << r.largest_sent << "," << r.largest_sum << "," << bits_for(r.largest_sent)
          << "," << r.clipped << "\n";
      gap.points.emplace_back(r.grads_per_sample, g);
      if (r.largest_sent > 0) sent.points.emplace_back(r.grads_per_sample, static_cast<double>(r.largest_sent));
    }
    panels[0].series.push_back(std::move(gap));
    panels[1].series.push_back(std::move(sent));
  }
  write_file_atomically(base + ".csv", csv.str());
  write_file_atomically(base + ".svg", render_svg(panels));

  nlohmann::json json = {{"dataset", report.dataset}, {"samples", report.samples},
                         {"features", report.features}, {"ranks", report.ranks},
                         {"lambda", report.lambda}, {"step", report.step},
                         {"f_star", report.f_star},
                         {"f_star_gradient_norm", report.f_star_gradient_norm}};
  for (const auto& m : report.methods) {
    json["methods"].push_back({{"method", m.method}, {"codec", m.codec},
                               {"iterations", m.iterations},
                               {"grads_per_sample", m.grads_per_sample},
                               {"final_gap", m.final_gap}, {"largest_sent", m.largest_sent},
                               {"largest_sent_late", m.largest_sent_late},
                               {"bits_sent", bits_for(m.largest_sent)},
                               {"bits_sent_late", bits_for(m.largest_sent_late)},
                               {"largest_sum", m.largest_sum}, {"clipped", m.clipped}});
  }
  write_file_atomically(base + ".json", json.dump(2) + "\n");
  report.files = {base + ".csv", base + ".svg", base + ".json"};
}

void validate(const LogregConfig& config) {
  for (const auto& method : config.methods) {
    if (std::find(std::begin(kMethods), std::end(kMethods), method) == std::end(kMethods)) {
      throw InvalidArgument("unknown method '" + method + "'; valid: intgd, intsgd, intdiana, "
                            "vr-intdiana");
    }
  }
  if (config.methods.empty()) throw InvalidArgument("--methods needs at least one method");
  if (!(config.passes > 0)) throw InvalidArgument("--passes must be positive");
  if (!(config.batch_fraction > 0 && config.batch_fraction <= 1)) {
    throw InvalidArgument("--batch-fraction must be in (0, 1]");
  }
  if (config.lambda < 0 || config.step < 0) throw InvalidArgument("--lambda and --step must be >= 0");
  if (config.algorithm == Algorithm::native) throw InvalidArgument("--algo must be ring or halving-doubling");
  // Rejects a bad wire, eps or beta before any work.
  make_integer_codec(codec_spec_for("intgd", config));
}

}  // namespace

double bits_for(std::uint64_t largest) {
  return std::log2(2.0 * static_cast<double>(largest) + 1.0);
}

namespace {

// Every option that shapes the calls, compared across ranks before the data
// is loaded: a rank launched with other settings fails every rank at once,
// naming them, instead of hanging in a collective.
void check_settings_agree(Communicator& comm, const LogregConfig& c) {
  std::string methods;
  for (const auto& m : c.methods) methods += (methods.empty() ? "" : ",") + m;
  const auto number = [](double v) {
    std::ostringstream text;
    text << std::setprecision(17) << v;
    return text.str();
  };
  Fingerprint fingerprint("experiment settings");
  fingerprint
      .add_text("data", "--data " + c.data + ", --normalize " + c.normalization +
                            ", --label-column " + std::to_string(c.label_column))
      .add_text("methods", "--methods " + methods + ", --wire " + c.wire + ", --algo " +
                               std::string(to_string(c.algorithm)))
      .add_text("budget", "--passes " + number(c.passes) + ", --max-iterations " +
                              std::to_string(c.max_iterations))
      .add_text("step", "--lambda " + number(c.lambda) + ", --eps " + number(c.epsilon) +
                            ", --beta " + number(c.beta) + ", --batch-fraction " +
                            number(c.batch_fraction) + ", --step " + number(c.step))
      .add_text("seed", "--seed " + std::to_string(c.seed));
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

}  // namespace

LogregReport run_logreg_experiment(Communicator& comm, const LogregConfig& config) {
  validate(config);
  check_settings_agree(comm, config);
  LogregReport report;
  Dataset data = load(config, report.dataset);
  const int n = comm.size();
  if (data.rows() < static_cast<std::size_t>(n)) {
    throw InvalidArgument("the data has " + std::to_string(data.rows()) + " samples, fewer than the " +
                          std::to_string(n) + " ranks");
  }
  report.samples = data.rows();
  report.features = data.features();
  report.ranks = n;
  report.lambda = config.lambda > 0 ? config.lambda : 5.0 / static_cast<double>(data.rows());
  // Split by original index into n folds (Appendix C.5).
  std::vector<std::size_t> starts(static_cast<std::size_t>(n) + 1);
  for (int i = 0; i <= n; ++i) starts[static_cast<std::size_t>(i)] = data.rows() * static_cast<std::size_t>(i) / static_cast<std::size_t>(n);
  const auto r = static_cast<std::size_t>(comm.rank());
  const auto local = LogisticObjective::shard(data, starts[r], starts[r + 1] - starts[r], report.lambda);
  const auto everything = LogisticObjective::federation(data, starts, report.lambda);
  report.step = config.step > 0 ? config.step : 1.0 / (2 * everything.sample_smoothness());

  if (comm.rank() == 0) {  // f* by Newton's method on the whole problem
    std::vector<double> optimum;
    report.f_star = convex::minimize(everything, optimum);
    std::vector<double> gradient(optimum.size());
    everything.gradient(optimum, gradient);
    double norm = 0;
    for (double v : gradient) norm += v * v;
    report.f_star_gradient_norm = std::sqrt(norm);
  }
  std::vector<std::vector<Record>> runs;
  for (std::size_t i = 0; i < config.methods.size(); ++i) {
    const auto& method = config.methods[i];
    runs.push_back(run_method(comm, method, local, data.rows(), report.step, i, config));
    report.methods.push_back(summarize(method, codec_spec_for(method, config), runs.back(),
                                       report.f_star));
  }
  if (comm.rank() == 0 && !config.output.empty()) write_outputs(config, report, runs);
  return report;
}

void print_logreg_report(std::ostream& out, const LogregReport& report) {
  out << "# intsgd-logreg: " << report.dataset << "\n# " << report.samples << " samples, "
      << report.features << " features, " << report.ranks << " ranks, lambda "
      << report.lambda << ", step " << report.step << ", f* " << std::setprecision(15)
      << report.f_star << " (|grad f*| " << std::setprecision(3) << report.f_star_gradient_norm
      << ")\n";
  out << std::left << std::setw(13) << "# method" << std::right << std::setw(8) << "iters"
      << std::setw(10) << "grad/mn" << std::setw(12) << "final gap" << std::setw(22)
      << "largest sent" << std::setw(7) << "bits" << std::setw(22) << "late (last 10%)"
      << std::setw(7) << "bits" << std::setw(22) << "largest sum" << std::setw(10) << "clipped"
      << "\n";
  for (const auto& m : report.methods) {
    out << std::left << std::setw(13) << m.method << std::right << std::setw(8) << m.iterations
        << std::setw(10) << std::setprecision(4) << m.grads_per_sample << std::setw(12)
        << std::setprecision(3) << m.final_gap << std::setw(22) << m.largest_sent << std::setw(7)
        << std::fixed << std::setprecision(2) << bits_for(m.largest_sent) << std::setw(22)
        << m.largest_sent_late << std::setw(7) << bits_for(m.largest_sent_late)
        << std::defaultfloat << std::setw(22) << m.largest_sum << std::setw(10)
        << m.clipped << "\n";
  }
  for (const auto& file : report.files) out << "# wrote " << file << "\n";
}

}  // namespace qccl::tools
