#include "qccl/experiments/qgenx/qgenx_experiment.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/reports/svg_plot.h"
#include "qccl/experiments/qgenx/gap.h"
#include "qccl/experiments/qgenx/problems.h"
#include "qccl/experiments/qgenx/qgenx_solver.h"
#include "qccl/experiments/qgenx/rate_fit.h"

namespace qccl::tools {
namespace {

// One variant × noise × seed: Q-GenX (Algorithm 1) for T iterations; rank 0
// evaluates the gap of the ergodic average (1/T)Σ_t X_{t+½}, the quantity
// Theorems 3–4 bound, at the record points.
RateRun run_one(Communicator& comm, const RatesConfig& c, const std::string& spec,
                const std::string& noise, std::uint64_t seed, std::size_t variant,
                std::string* description) {
  const Setup setup = make_setup(c.game(), noise, seed);
  if (description) *description = setup.description;
  return run_qgenx(comm, setup,
                   {c.method, spec, noise, seed, variant, c.iterations, c.radius, c.algorithm});
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
      s.slope = tail_slope(curve, c.iterations, c.fit_octaves);
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
        s.seed_slopes.push_back(tail_slope(own, c.iterations, c.fit_octaves));
        s.bits_per_coordinate += r->bits_per_coordinate / static_cast<double>(group.size());
        s.sent_bits_per_coordinate += r->sent_bits_per_coordinate / static_cast<double>(group.size());
        s.bound_bits_per_coordinate += r->bound_bits_per_coordinate / static_cast<double>(group.size());
      }
      summaries.push_back(std::move(s));
    }
  }
  return summaries;
}

std::string csv_text(const std::vector<RateRun>& runs) {
  std::ostringstream csv;
  csv << "codec,noise,seed," << kPointColumns << "\n" << std::setprecision(17);
  for (const auto& r : runs) {
    for (const auto& point : r.points) {
      csv << '"' << r.codec << "\"," << r.noise << "," << r.seed << ",";
      write_point_columns(csv, r, point);
      csv << "\n";
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
  report.files = write_experiment_files(c.output, "qgenx-rates", csv_text(report.runs),
                                        json_text(c, report), svg_text(c, report));
}

// Every option that shapes the calls, compared across ranks before any run.
void check_settings_agree(Communicator& comm, const RatesConfig& c) {
  std::ostringstream text;
  text << std::setprecision(17) << c.method << " T " << c.iterations << " seeds " << c.seeds << "/"
       << c.seed << " n " << c.n << " sigma " << c.sigma << " keep " << c.keep << " alpha "
       << c.alpha << " radius " << c.radius << " fit " << c.fit_octaves << " algo "
       << to_string(c.algorithm);
  std::vector<std::string> variants = c.codecs;
  variants.insert(variants.end(), c.noises.begin(), c.noises.end());
  tools::check_settings_agree(comm, text.str(), variants);
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
  validate_game(c.game(), c.noises);
  if (c.iterations < 16) throw InvalidArgument("--iterations must be at least 16");
  if (c.seeds < 1) throw InvalidArgument("--seeds must be at least 1");
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
