#include "qccl/experiments/qgenx/sgda_experiment.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/sgda_solver.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::tools {
namespace {

constexpr std::string_view kQGenXPrefix = "qgenx-";

bool is_qgenx(const std::string& method) { return method.rfind(kQGenXPrefix, 0) == 0; }

// Quantized SGDA (Beznosikov et al. 2022; Q-GenX Appendix H.1) with the
// experiment's codec: constant step γ, or Q-GenX's adaptive rule.
RateRun run_sgda(Communicator& comm, const SgdaConfig& c, const Setup& setup,
                 const std::string& method, const std::string& noise, std::uint64_t seed) {
  const vi::StochasticOracle oracle(setup.problem.op, setup.noise, seed, setup.problem.split);
  auto codec = make_codec(c.codec, {.seed = seed, .bucket = 0});
  vi::SgdaSettings settings;
  settings.step_rule = method == "sgda" ? vi::StepRule::constant : vi::StepRule::adaptive;
  settings.step = c.sgda_step;
  settings.collective.algorithm = c.algorithm;
  settings.encoded_bits = encoded_bits;
  vi::QuantizedSgda solver(comm, oracle, *codec, settings);
  RateRun run{method, noise, seed, {}, 0, 0, 0, 0};
  run_trajectory(comm, solver, setup, c.game.radius, c.iterations, run);
  return run;
}

RateRun run_method(Communicator& comm, const SgdaConfig& c, const Setup& setup,
                   const std::string& method, const std::string& noise, std::uint64_t seed) {
  if (!is_qgenx(method)) return run_sgda(comm, c, setup, method, noise, seed);
  RateRun run = run_qgenx(comm, setup, {method.substr(kQGenXPrefix.size()), c.codec, noise, seed, 0,
                                        c.iterations, c.game.radius, c.algorithm});
  run.codec = method;
  return run;
}

std::vector<const RateRun*> group_of(const SgdaReport& report, const std::string& method,
                                     const std::string& noise) {
  std::vector<const RateRun*> group;
  for (const auto& r : report.runs) {
    if (r.codec == method && r.noise == noise) group.push_back(&r);
  }
  return group;
}

std::vector<SgdaSummary> summarize(const SgdaConfig& c, const SgdaReport& report) {
  std::vector<SgdaSummary> summaries;
  for (const auto& noise : c.noises) {
    for (const auto& method : c.methods) {
      const auto group = group_of(report, method, noise);
      SgdaSummary s{method, noise, {}, 0, 0, 0, is_qgenx(method) ? theory_slope(noise) : NAN, 0};
      for (const RateRun* r : group) {
        s.gaps.push_back(r->points.back().gap);
        s.diverged += r->diverged_at != 0 ? 1 : 0;
      }
      std::tie(s.mean, s.spread) = mean_and_spread(s.gaps);
      s.slope = tail_slope(mean_curve(group), c.iterations, c.fit_octaves);
      summaries.push_back(std::move(s));
    }
  }
  return summaries;
}

std::string csv_text(const SgdaReport& report) {
  std::ostringstream csv;
  csv << "method,noise,seed," << kPointColumns << "\n" << std::setprecision(17);
  for (const auto& r : report.runs) {
    for (const auto& point : r.points) {
      csv << r.codec << "," << r.noise << "," << r.seed << ",";
      write_point_columns(csv, r, point);
      csv << "\n";
    }
  }
  return csv.str();
}

// Per noise: each method's gap against T (geometric mean over seeds; a
// diverged run's points are left out).
std::string svg_text(const SgdaConfig& c, const SgdaReport& report) {
  std::vector<PlotPanel> panels;
  for (const auto& noise : c.noises) {
    PlotPanel panel{"Gap of the ergodic average, " + noise + " noise, K = " +
                        std::to_string(report.ranks) + ", " + c.codec,
                    "T (iterations)", "gap", true, true, {}};
    for (const auto& method : c.methods) {
      auto curve = mean_curve(group_of(report, method, noise));
      std::erase_if(curve, [](const auto& p) { return !std::isfinite(p.second); });
      panel.series.push_back({method, std::move(curve), false});
    }
    panel.off_scale_outliers = true;
    panels.push_back(std::move(panel));
  }
  return render_svg(panels);
}

std::string json_text(const SgdaConfig& c, const SgdaReport& report) {
  nlohmann::json json = {{"experiment", "qgenx-sgda"}, {"ranks", report.ranks},
                         {"codec", c.codec}, {"methods", c.methods},
                         {"iterations", c.iterations}, {"seeds", c.seeds}, {"seed", c.seed},
                         {"dimension", 2 * c.game.n}, {"sigma", c.game.sigma},
                         {"keep", c.game.keep}, {"alpha", c.game.alpha},
                         {"radius", c.game.radius}, {"sgda_step", c.sgda_step},
                         {"fit_octaves", c.fit_octaves}, {"problems", report.problems}};
  json["summaries"] = nlohmann::json::array();
  for (const auto& s : report.summaries) {
    nlohmann::json gaps = nlohmann::json::array();
    for (double g : s.gaps) gaps.push_back(number_or_null(g));
    json["summaries"].push_back({{"method", s.method}, {"noise", s.noise}, {"gaps", gaps},
                                 {"mean", number_or_null(s.mean)},
                                 {"spread", number_or_null(s.spread)},
                                 {"slope", number_or_null(s.slope)},
                                 {"theory_slope", number_or_null(s.theory_slope)},
                                 {"diverged", s.diverged}});
  }
  return json.dump(2) + "\n";
}

void write_outputs(const SgdaConfig& c, SgdaReport& report) {
  report.files = write_experiment_files(c.output, "qgenx-sgda", csv_text(report),
                                        json_text(c, report), svg_text(c, report));
}

// Every option that shapes the calls, compared across ranks before any run.
void check_settings_agree(Communicator& comm, const SgdaConfig& c) {
  std::ostringstream text;
  text << std::setprecision(17) << c.codec << " T " << c.iterations << " seeds " << c.seeds << "/"
       << c.seed << " n " << c.game.n << " sigma " << c.game.sigma << " keep " << c.game.keep
       << " alpha " << c.game.alpha << " radius " << c.game.radius << " step " << c.sgda_step
       << " algo " << to_string(c.algorithm);
  std::vector<std::string> variants = c.methods;
  variants.insert(variants.end(), c.noises.begin(), c.noises.end());
  tools::check_settings_agree(comm, text.str(), variants);
}

}  // namespace

void validate(const SgdaConfig& c) {
  if (c.methods.empty()) throw InvalidArgument("--methods: at least one method is needed");
  for (const auto& m : c.methods) {
    if (is_qgenx(m)) {
      vi::parse_method(m.substr(kQGenXPrefix.size()));
    } else if (m != "sgda" && m != "sgda-adaptive") {
      throw InvalidArgument("--methods: unknown '" + m + "'; valid: qgenx-de, qgenx-optda, "
                            "qgenx-da, sgda, sgda-adaptive");
    }
  }
  make_codec(c.codec)->check_supported(CodecOperation::allreduce_mean);
  validate_game(c.game, c.noises);
  if (c.iterations < 16) throw InvalidArgument("--iterations must be at least 16");
  if (c.seeds < 1) throw InvalidArgument("--seeds must be at least 1");
  if (!(c.sgda_step > 0 && std::isfinite(c.sgda_step))) {
    throw InvalidArgument("--sgda-step must be positive and finite (SGDA's step γ)");
  }
  if (!(c.fit_octaves > 0 && std::pow(2.0, c.fit_octaves) <= static_cast<double>(c.iterations))) {
    throw InvalidArgument("--fit-octaves must be positive and at most log2(--iterations)");
  }
  if (c.algorithm == Algorithm::native) throw InvalidArgument("--algo must be ring or halving-doubling");
}

SgdaReport run_sgda_experiment(Communicator& comm, const SgdaConfig& c) {
  validate(c);
  check_settings_agree(comm, c);
  SgdaReport report;
  report.ranks = comm.size();
  for (const auto& noise : c.noises) {
    for (const auto& method : c.methods) {
      for (std::size_t s = 0; s < c.seeds; ++s) {
        const Setup setup = make_setup(c.game, noise, c.seed + s);
        report.runs.push_back(run_method(comm, c, setup, method, noise, c.seed + s));
        if (method == c.methods.front() && s == 0) report.problems.push_back(setup.description);
      }
    }
  }
  if (comm.rank() != 0) return report;
  report.summaries = summarize(c, report);
  if (!c.output.empty()) write_outputs(c, report);
  return report;
}

void print_sgda_report(std::ostream& out, const SgdaReport& report) {
  out << "# qgenx-sgda: Q-GenX against quantized SGDA on " << report.ranks << " ranks\n";
  for (const auto& p : report.problems) out << "# " << p << "\n";
  out << std::left << std::setw(16) << "# method" << std::setw(10) << "noise" << std::right
      << std::setw(12) << "gap mean" << std::setw(12) << "sd" << std::setw(8) << "slope"
      << std::setw(8) << "theory" << std::setw(10) << "diverged" << "\n";
  for (const auto& s : report.summaries) {
    out << std::left << std::setw(16) << s.method << std::setw(10) << s.noise << std::right
        << std::scientific << std::setprecision(3) << std::setw(12) << s.mean << std::setw(12)
        << s.spread << std::fixed << std::setprecision(3) << std::setw(8) << s.slope
        << std::setw(8) << s.theory_slope << std::setw(10) << s.diverged << std::defaultfloat
        << "\n";
  }
  out << "# gap mean, sd: over seeds at T; slope: log Gap against log T over the tail\n"
         "# (geometric mean over seeds); theory: Q-GenX Theorems 3-4 (none for SGDA)\n";
  for (const auto& file : report.files) out << "# wrote " << file << "\n";
}

}  // namespace qccl::tools
