#include "qccl/experiments/qgenx/qgenx_runs.h"

#include <algorithm>
#include <filesystem>

#include "qccl/codecs/quantizers/qgenx.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/experiments/qgenx/rate_fit.h"

namespace qccl::tools {

Setup make_setup(const GameSettings& game, const std::string& noise, std::uint64_t seed) {
  const auto described = [](vi::Problem problem, vi::NoiseSettings settings) {
    std::string description = problem.description + ", " + vi::to_string(settings.kind) + " noise";
    return Setup{std::move(problem), settings, std::move(description)};
  };
  if (noise == "absolute") {
    vi::QuadraticSettings quadratic;
    quadratic.n = game.n;
    quadratic.strong_monotonicity = 0;
    quadratic.rank = game.n / 2;
    quadratic.seed = seed;
    return described(vi::make_quadratic_game(quadratic), {vi::NoiseKind::absolute, game.sigma, game.keep});
  }
  vi::BilinearSettings bilinear;
  bilinear.n = game.n;
  bilinear.regularization = game.alpha;
  bilinear.seed = seed;
  return described(vi::make_bilinear_game(bilinear), {vi::NoiseKind::coordinates, 0, game.keep});
}

void validate_game(const GameSettings& game, const std::vector<std::string>& noises) {
  if (noises.empty()) throw InvalidArgument("--noise: at least one of absolute, relative");
  for (const auto& noise : noises) {
    if (noise != "absolute" && noise != "relative") {
      throw InvalidArgument("--noise: unknown '" + noise + "'; valid: absolute, relative");
    }
  }
  if (game.n < 2) throw InvalidArgument("--n must be at least 2 (each player's dimension)");
  if (!(game.sigma > 0 && std::isfinite(game.sigma))) throw InvalidArgument("--sigma must be positive");
  if (!(game.keep > 0 && game.keep < 1)) throw InvalidArgument("--keep must be in (0, 1)");
  if (!(game.alpha > 0 && std::isfinite(game.alpha))) {
    throw InvalidArgument("--alpha must be positive (the relative-noise game must be co-coercive)");
  }
  if (!(game.radius > 0 && std::isfinite(game.radius))) {
    throw InvalidArgument("--radius must be positive");
  }
}

double theory_slope(const std::string& noise) { return noise == "absolute" ? -0.5 : -1.0; }

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

vi::EncodedBits encoded_bits(const Codec& codec, std::size_t count) {
  if (const auto* qgenx = dynamic_cast<const QGenXCodec*>(&codec)) {
    const QGenXStepReport& report = qgenx->last_report();
    return {static_cast<double>(report.bits), report.bound_bits};
  }
  return {8.0 * static_cast<double>(codec.wire_bytes(count)), NAN};
}

RatePoint measure(const Setup& setup, const vi::GapFunction& gap, double radius,
                  const std::vector<double>& average, std::size_t t, double gamma) {
  // A mean that overflowed fp32 in transit leaves the iterate infinite
  // one step before the next exchange raises NonFiniteError.
  for (double a : average) {
    if (!std::isfinite(a)) return {t, INFINITY, INFINITY, gamma, true};
  }
  const auto& solution = setup.problem.solution;
  double distance = 0;
  for (std::size_t i = 0; i < average.size(); ++i) {
    distance += (average[i] - solution[i]) * (average[i] - solution[i]);
  }
  const vi::GapValue g = gap.evaluate(average);
  double reach = 0;
  for (std::size_t i = 0; i < average.size(); ++i) {
    reach += (g.maximizer[i] - solution[i]) * (g.maximizer[i] - solution[i]);
  }
  const bool boundary = std::sqrt(reach) >= radius * (1 - 1e-9);
  return {t, g.value, std::sqrt(distance), gamma, boundary};
}

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

double tail_slope(const std::vector<std::pair<double, double>>& curve, std::size_t iterations,
                  double octaves) {
  const double from = static_cast<double>(iterations) / std::pow(2.0, octaves);
  std::vector<std::pair<double, double>> tail;
  for (const auto& point : curve) {
    if (point.first >= from && point.second > 0 && std::isfinite(point.second)) tail.push_back(point);
  }
  return tail.size() >= 2 ? vi::fit_power_law(tail).slope : NAN;
}

std::pair<double, double> mean_and_spread(const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  double mean = 0, squares = 0;
  for (double v : values) mean += v / n;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, values.size() > 1 ? std::sqrt(squares / (n - 1)) : NAN};
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

const char* const kPointColumns =
    "iteration,gap,distance,gamma,boundary,bits_per_coordinate,sent_bits_per_coordinate,"
    "bound_bits_per_coordinate";

void write_point_columns(std::ostream& out, const RateRun& run, const RatePoint& point) {
  out << point.iteration << "," << point.gap << "," << point.distance << "," << point.gamma << ","
      << (point.boundary ? 1 : 0) << "," << run.bits_per_coordinate << ","
      << run.sent_bits_per_coordinate << ","
      << (std::isfinite(run.bound_bits_per_coordinate) ? run.bound_bits_per_coordinate : NAN);
}

std::vector<std::string> write_experiment_files(const std::string& directory, const std::string& name,
                                                const std::string& csv, const std::string& json,
                                                const std::string& svg) {
  std::filesystem::create_directories(directory);
  const std::string base = directory + "/" + name;
  write_file_atomically(base + ".csv", csv);
  write_file_atomically(base + ".json", json);
  write_file_atomically(base + ".svg", svg);
  return {base + ".csv", base + ".json", base + ".svg"};
}

void check_settings_agree(Communicator& comm, const std::string& settings,
                          const std::vector<std::string>& variants) {
  std::string lists;
  for (const auto& v : variants) lists += v + ";";
  Fingerprint fingerprint("experiment settings");
  fingerprint.add_text("settings", settings).add_text("variants", lists);
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

RateRun run_qgenx(Communicator& comm, const Setup& setup, const QGenXRunSpec& spec) {
  const vi::StochasticOracle oracle(setup.problem.op, setup.noise, spec.seed, setup.problem.split);
  auto codec = make_codec(spec.codec, {.seed = spec.seed, .bucket = spec.variant});
  vi::SolverSettings settings;
  settings.method = vi::parse_method(spec.method);
  settings.collective.algorithm = spec.algorithm;
  settings.encoded_bits = encoded_bits;
  vi::QGenXSolver solver(comm, oracle, *codec, settings);
  RateRun run{spec.codec, spec.noise, spec.seed, {}, 0, 0, 0, 0};
  run_trajectory(comm, solver, setup, spec.radius, spec.iterations, run);
  return run;
}

void finish_bits(Communicator& comm, const Setup& setup, std::vector<double> totals, RateRun& run) {
  engines::sum_over_ranks(comm, totals, "qgenx experiment bits");
  const double coordinates = totals[3] * static_cast<double>(setup.problem.op.dimension());
  run.bits_per_coordinate = totals[0] / coordinates;
  run.bound_bits_per_coordinate = totals[1] / coordinates;
  run.sent_bits_per_coordinate = 8.0 * totals[2] / coordinates;
}

}  // namespace qccl::tools
