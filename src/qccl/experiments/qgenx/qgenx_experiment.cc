#include "qccl/experiments/qgenx/qgenx_experiment.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/quantizers/qgenx.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/reports/svg_plot.h"
#include "qccl/experiments/qgenx/gap.h"
#include "qccl/experiments/qgenx/problems.h"
#include "qccl/experiments/qgenx/qgenx_solver.h"
#include "qccl/experiments/qgenx/rate_fit.h"

namespace qccl::tools {
namespace {

using vi::Problem;

// The slopes of Q-GenX Theorem 3 (absolute noise, O(1/√T)) and Theorem 4
// (relative noise with co-coercivity, O(1/T)).
double theory_slope(const std::string& noise) { return noise == "absolute" ? -0.5 : -1.0; }

// The problem and noise of one run: a merely monotone game under absolute
// noise (Assumption 2), a co-coercive bilinear game (Assumption 4) under
// coordinate sampling (Assumption 3, Appendix J); see the header.
struct Setup {
  Problem problem;
  vi::NoiseSettings noise;
};

Setup make_setup(const RatesConfig& c, const std::string& noise, std::uint64_t seed) {
  if (noise == "absolute") {
    vi::QuadraticSettings game;
    game.n = c.n;
    game.strong_monotonicity = 0;
    game.rank = c.n / 2;
    game.seed = seed;
    return {vi::make_quadratic_game(game), {vi::NoiseKind::absolute, c.sigma, c.keep}};
  }
  vi::BilinearSettings game;
  game.n = c.n;
  game.regularization = c.alpha;
  game.seed = seed;
  return {vi::make_bilinear_game(game), {vi::NoiseKind::coordinates, 0, c.keep}};
}

// T = ⌊2^(j/4)⌋ for j = 0, 1, … (four per octave, duplicates dropped), and T.
std::vector<std::size_t> record_points(std::size_t iterations) {
  std::vector<std::size_t> points;
  for (int j = 0;; ++j) {
    const auto t = static_cast<std::size_t>(std::floor(std::pow(2.0, j / 4.0)));
    if (t >= iterations) break;
    if (points.empty() || points.back() != t) points.push_back(t);
  }
  points.push_back(iterations);
  return points;
}

// What the codec encoded in its latest step: the qgenx codec's own count
// (entropy-coded symbols, headers and padding included) and Q-GenX
// Theorem 2's bound; for other codecs, their fixed wire size and no bound.
vi::EncodedBits encoded_bits(const Codec& codec, std::size_t count) {
  if (const auto* qgenx = dynamic_cast<const QGenXCodec*>(&codec)) {
    const QGenXStepReport& report = qgenx->last_report();
    return {static_cast<double>(report.bits), report.bound_bits};
  }
  return {8.0 * static_cast<double>(codec.wire_bytes(count)), NAN};
}

// One variant × noise × seed: Q-GenX (Algorithm 1) for T iterations; rank 0
// evaluates the gap of the ergodic average (1/T)Σ_t X_{t+½}, the quantity
// Theorems 3–4 bound, at the record points.
RateRun run_one(Communicator& comm, const RatesConfig& c, const std::string& spec,
                const std::string& noise, std::uint64_t seed, std::size_t variant,
                std::string* description) {
  const Setup setup = make_setup(c, noise, seed);
  const Problem& p = setup.problem;
  if (description) *description = p.description + ", " + vi::to_string(setup.noise.kind) + " noise";
  const vi::StochasticOracle oracle(p.op, setup.noise, seed, p.split);
  const vi::GapFunction gap(p.op, {vi::DomainShape::ball, p.solution, c.radius});
  auto codec = make_codec(spec, {.seed = seed, .bucket = variant});
  vi::SolverSettings settings;
  settings.method = vi::parse_method(c.method);
  settings.collective.algorithm = c.algorithm;
  settings.encoded_bits = encoded_bits;
  vi::QGenXSolver solver(comm, oracle, *codec, settings);
  RateRun run{spec, noise, seed, {}, 0, 0, 0};
  // Summed over steps: this rank's encoded bits, their bound, data bytes,
  // and the vectors exchanged.
  std::vector<double> totals(4, 0.0);
  for (std::size_t t : record_points(c.iterations)) {
    while (solver.iteration() < t) {
      const vi::StepReport r = solver.step();
      totals[0] += r.encoded_bits;
      totals[1] += r.bound_bits;
      totals[2] += static_cast<double>(r.data_bytes);
      totals[3] += static_cast<double>(r.vector_exchanges);
    }
    if (comm.rank() != 0) continue;
    const auto average = solver.average();
    double distance = 0;
    for (std::size_t i = 0; i < average.size(); ++i) {
      distance += (average[i] - p.solution[i]) * (average[i] - p.solution[i]);
    }
    const vi::GapValue g = gap.evaluate(average);
    double reach = 0;
    for (std::size_t i = 0; i < average.size(); ++i) {
      reach += (g.maximizer[i] - p.solution[i]) * (g.maximizer[i] - p.solution[i]);
    }
    const bool boundary = std::sqrt(reach) >= c.radius * (1 - 1e-9);
    run.points.push_back({t, g.value, std::sqrt(distance), solver.gamma(), boundary});
  }
  solver.check_replicas();
  engines::sum_over_ranks(comm, totals, "qgenx-rates bits");
  const double coordinates = totals[3] * static_cast<double>(p.op.dimension());  // over ranks
  run.bits_per_coordinate = totals[0] / coordinates;
  run.bound_bits_per_coordinate = totals[1] / coordinates;
  run.sent_bits_per_coordinate = 8.0 * totals[2] / coordinates;
  return run;
}

// The geometric mean over seeds of the gap at each recorded T.
std::vector<std::pair<double, double>> mean_curve(const std::vector<const RateRun*>& runs) {
  std::vector<std::pair<double, double>> curve;
  for (std::size_t i = 0; i < runs.front()->points.size(); ++i) {
    double log_sum = 0;
    for (const RateRun* r : runs) log_sum += std::log(std::max(r->points[i].gap, 1e-300));
    curve.emplace_back(static_cast<double>(runs.front()->points[i].iteration),
                       std::exp(log_sum / static_cast<double>(runs.size())));
  }
  return curve;
}

double tail_slope(const std::vector<std::pair<double, double>>& curve, const RatesConfig& c) {
  const double from = static_cast<double>(c.iterations) / std::pow(2.0, c.fit_octaves);
  std::vector<std::pair<double, double>> tail;
  for (const auto& point : curve) {
    if (point.first >= from && point.second > 0) tail.push_back(point);
  }
  return tail.size() >= 2 ? vi::fit_power_law(tail).slope : NAN;
}

std::vector<RateSummary> summarize(const RatesConfig& c, const std::vector<RateRun>& runs) {
  std::vector<RateSummary> summaries;
  for (const auto& noise : c.noises) {
    for (const auto& codec : c.codecs) {
      std::vector<const RateRun*> group;
      for (const auto& r : runs) {
        if (r.codec == codec && r.noise == noise) group.push_back(&r);
      }
      RateSummary s{codec, noise, 0, theory_slope(noise), {}, 0, 0, 0, 0, 0};
      const auto curve = mean_curve(group);
      s.slope = tail_slope(curve, c);
      s.final_gap = curve.back().second;
      const double from = static_cast<double>(c.iterations) / std::pow(2.0, c.fit_octaves);
      std::size_t fitted = 0, boundary = 0;
      for (const RateRun* r : group) {
        for (const auto& point : r->points) {
          if (static_cast<double>(point.iteration) < from) continue;
          ++fitted;
          boundary += point.boundary ? 1 : 0;
        }
      }
      s.boundary_fraction = static_cast<double>(boundary) / static_cast<double>(fitted);
      for (const RateRun* r : group) {
        std::vector<std::pair<double, double>> own;
        for (const auto& point : r->points) own.emplace_back(point.iteration, point.gap);
        s.seed_slopes.push_back(tail_slope(own, c));
        s.bits_per_coordinate += r->bits_per_coordinate / static_cast<double>(group.size());
        s.sent_bits_per_coordinate += r->sent_bits_per_coordinate / static_cast<double>(group.size());
        s.bound_bits_per_coordinate += r->bound_bits_per_coordinate / static_cast<double>(group.size());
      }
      summaries.push_back(std::move(s));
    }
  }
  return summaries;
}

// JSON has no NaN: unknown numbers are null.
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string csv_text(const std::vector<RateRun>& runs) {
  std::ostringstream csv;
  csv << "codec,noise,seed,iteration,gap,distance,gamma,boundary,bits_per_coordinate,"
         "sent_bits_per_coordinate,bound_bits_per_coordinate\n"
      << std::setprecision(17);
  for (const auto& r : runs) {
    for (const auto& point : r.points) {
      csv << '"' << r.codec << "\"," << r.noise << "," << r.seed << "," << point.iteration << ","
          << point.gap << "," << point.distance << "," << point.gamma << ","
          << (point.boundary ? 1 : 0) << "," << r.bits_per_coordinate << "," << r.sent_bits_per_coordinate << ","
          << (std::isfinite(r.bound_bits_per_coordinate) ? r.bound_bits_per_coordinate : NAN)
          << "\n";
    }
  }
  return csv.str();
}

std::string svg_text(const RatesConfig& c, const RatesReport& report) {
  std::vector<PlotPanel> panels;
  for (const auto& noise : c.noises) {
    PlotPanel panel{"Gap of the ergodic average, " + noise + " noise, K = " +
                        std::to_string(report.ranks) + " (" + report.method + ")",
                    "T (iterations)", "gap", true, true, {}};
    std::vector<std::pair<double, double>> first;
    for (const auto& codec : c.codecs) {
      std::vector<const RateRun*> group;
      for (const auto& r : report.runs) {
        if (r.codec == codec && r.noise == noise) group.push_back(&r);
      }
      auto curve = mean_curve(group);
      if (first.empty()) first = curve;
      panel.series.push_back({codec, std::move(curve), false});
    }
    // The theory's slope through the first variant's value at T.
    const double slope = theory_slope(noise);
    const auto& [t_end, gap_end] = first.back();
    // One name in every panel: the legend is the first panel's.
    PlotSeries theory{"theory: T^-1/2 absolute (Theorem 3), T^-1 relative (Theorem 4)", {}, false};
    for (const auto& point : first) {
      theory.points.emplace_back(point.first, gap_end * std::pow(point.first / t_end, slope));
    }
    panel.series.push_back(std::move(theory));
    panels.push_back(std::move(panel));
  }
  return render_svg(panels);
}

std::string json_text(const RatesConfig& c, const RatesReport& report) {
  nlohmann::json json = {{"experiment", "qgenx-rates"}, {"ranks", report.ranks},
                         {"method", report.method}, {"iterations", c.iterations},
                         {"seeds", c.seeds}, {"seed", c.seed}, {"dimension", 2 * c.n},
                         {"sigma", c.sigma}, {"keep", c.keep}, {"alpha", c.alpha},
                         {"radius", c.radius}, {"fit_octaves", c.fit_octaves},
                         {"problems", report.problems}};
  for (const auto& s : report.summaries) {
    nlohmann::json seeds = nlohmann::json::array();
    for (double v : s.seed_slopes) seeds.push_back(number_or_null(v));
    json["summaries"].push_back({{"codec", s.codec}, {"noise", s.noise},
                                 {"slope", number_or_null(s.slope)},
                                 {"theory_slope", s.theory_slope}, {"seed_slopes", seeds},
                                 {"final_gap", s.final_gap},
                                 {"boundary_fraction", s.boundary_fraction},
                                 {"bits_per_coordinate", s.bits_per_coordinate},
                                 {"sent_bits_per_coordinate", s.sent_bits_per_coordinate},
                                 {"bound_bits_per_coordinate",
                                  number_or_null(s.bound_bits_per_coordinate)}});
  }
  return json.dump(2) + "\n";
}

void write_outputs(const RatesConfig& c, RatesReport& report) {
  std::filesystem::create_directories(c.output);
  const std::string base = c.output + "/qgenx-rates";
  write_file_atomically(base + ".csv", csv_text(report.runs));
  write_file_atomically(base + ".json", json_text(c, report));
  write_file_atomically(base + ".svg", svg_text(c, report));
  report.files = {base + ".csv", base + ".json", base + ".svg"};
}

// Every option that shapes the calls, compared across ranks before any run.
void check_settings_agree(Communicator& comm, const RatesConfig& c) {
  std::ostringstream text;
  text << std::setprecision(17) << c.method << " T " << c.iterations << " seeds " << c.seeds << "/"
       << c.seed << " n " << c.n << " sigma " << c.sigma << " keep " << c.keep << " alpha "
       << c.alpha << " radius " << c.radius << " fit " << c.fit_octaves << " algo "
       << to_string(c.algorithm);
  std::string lists;
  for (const auto& v : c.codecs) lists += v + ";";
  for (const auto& v : c.noises) lists += v + ";";
  Fingerprint fingerprint("experiment settings");
  fingerprint.add_text("settings", text.str()).add_text("variants", lists);
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

}  // namespace

std::vector<std::string> default_rate_codecs() {
  return {"fp32",
          "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed",
          "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=huffman",
          "qgenx:bits=4,levels=qada,norm=inf,bucket=0,coding=fixed",
          "qgenx:bits=4,levels=qada,norm=inf,bucket=0,coding=huffman"};
}

void validate(const RatesConfig& c) {
  vi::parse_method(c.method);
  if (c.codecs.empty()) throw InvalidArgument("--codec: at least one codec variant is needed");
  for (const auto& spec : c.codecs) {
    make_codec(spec)->check_supported(CodecOperation::allreduce_mean);
  }
  if (c.noises.empty()) throw InvalidArgument("--noise: at least one of absolute, relative");
  for (const auto& noise : c.noises) {
    if (noise != "absolute" && noise != "relative") {
      throw InvalidArgument("--noise: unknown '" + noise + "'; valid: absolute, relative");
    }
  }
  if (c.iterations < 16) throw InvalidArgument("--iterations must be at least 16");
  if (c.seeds < 1) throw InvalidArgument("--seeds must be at least 1");
  if (c.n < 2) throw InvalidArgument("--n must be at least 2 (each player's dimension)");
  if (!(c.sigma > 0 && std::isfinite(c.sigma))) throw InvalidArgument("--sigma must be positive");
  if (!(c.keep > 0 && c.keep < 1)) throw InvalidArgument("--keep must be in (0, 1)");
  if (!(c.alpha > 0 && std::isfinite(c.alpha))) {
    throw InvalidArgument("--alpha must be positive (the relative-noise game must be co-coercive)");
  }
  if (!(c.radius > 0 && std::isfinite(c.radius))) throw InvalidArgument("--radius must be positive");
  if (!(c.fit_octaves > 0 && std::pow(2.0, c.fit_octaves) <= static_cast<double>(c.iterations))) {
    throw InvalidArgument("--fit-octaves must be positive and at most log2(--iterations)");
  }
  if (c.algorithm == Algorithm::native) throw InvalidArgument("--algo must be ring or halving-doubling");
}

RatesReport run_rates_experiment(Communicator& comm, const RatesConfig& config) {
  validate(config);
  check_settings_agree(comm, config);
  RatesReport report;
  report.ranks = comm.size();
  report.method = config.method;
  for (const auto& noise : config.noises) {
    for (std::size_t v = 0; v < config.codecs.size(); ++v) {
      for (std::size_t s = 0; s < config.seeds; ++s) {
        const bool first = v == 0 && s == 0;
        std::string description;
        report.runs.push_back(run_one(comm, config, config.codecs[v], noise, config.seed + s, v,
                                      first ? &description : nullptr));
        if (first) report.problems.push_back(description);
      }
    }
  }
  if (comm.rank() != 0) return report;
  report.summaries = summarize(config, report.runs);
  if (!config.output.empty()) write_outputs(config, report);
  return report;
}

void print_rates_report(std::ostream& out, const RatesReport& report) {
  out << "# qgenx-rates: Q-GenX (" << report.method << ") on " << report.ranks << " ranks\n";
  for (const auto& p : report.problems) out << "# " << p << "\n";
  std::size_t width = 8;
  for (const auto& s : report.summaries) width = std::max(width, s.codec.size() + 2);
  out << std::left << std::setw(static_cast<int>(width)) << "# codec" << std::setw(10) << "noise"
      << std::right << std::setw(8) << "slope" << std::setw(8) << "theory" << std::setw(12)
      << "final gap" << std::setw(10) << "bits/co" << std::setw(10) << "sent/co" << std::setw(10)
      << "bound/co" << "\n";
  for (const auto& s : report.summaries) {
    out << std::left << std::setw(static_cast<int>(width)) << s.codec << std::setw(10) << s.noise
        << std::right << std::fixed << std::setprecision(3) << std::setw(8) << s.slope
        << std::setw(8) << s.theory_slope << std::scientific << std::setprecision(3)
        << std::setw(12) << s.final_gap << std::fixed << std::setprecision(2) << std::setw(10)
        << s.bits_per_coordinate << std::setw(10) << s.sent_bits_per_coordinate << std::setw(10)
        << s.bound_bits_per_coordinate << std::defaultfloat << "\n";
  }
  out << "# slope: log Gap against log T over the last fitted octaves, geometric mean over seeds;\n"
         "# bits/co: what a rank encoded per coordinate (headers included), bound/co: Theorem 2;\n"
         "# sent/co: transport bits a rank sent per coordinate exchanged (statistics included)\n";
  for (const auto& file : report.files) out << "# wrote " << file << "\n";
}

}  // namespace qccl::tools
