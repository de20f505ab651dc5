#include "qccl/experiments/qgenx/workers_experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/rate_fit.h"
#include "qccl/reports/svg_plot.h"
#include "qccl/transport/local_transport.h"

namespace qccl::tools {
namespace {

// One world of K in-process ranks: every noise × codec × seed, in that
// order, each a Q-GenX run of T iterations (rank 0 keeps the records).
void run_world(const WorkersConfig& c, int workers, WorkersReport& report) {
  std::vector<RateRun> runs;
  std::vector<std::string> problems;
  run_in_process(workers, [&](Transport& transport) {
    Communicator comm(transport, {std::chrono::milliseconds(c.timeout_ms), true});
    for (const auto& noise : c.noises) {
      for (std::size_t v = 0; v < c.codecs.size(); ++v) {
        for (std::size_t s = 0; s < c.seeds; ++s) {
          const std::uint64_t seed = c.seed + s;
          const Setup setup = make_setup(c.game, noise, seed);
          RateRun run = run_qgenx(comm, setup, {c.method, c.codecs[v], noise, seed, v, c.iterations,
                                                c.game.radius, c.algorithm});
          if (comm.rank() != 0) continue;
          if (v == 0 && s == 0) problems.push_back(setup.description);
          runs.push_back(std::move(run));
        }
      }
    }
  });
  if (report.problems.empty()) report.problems = problems;
  for (auto& run : runs) {
    report.runs.push_back(std::move(run));
    report.runs_workers.push_back(workers);
  }
}

// The runs of one codec and noise (and K, unless 0).
std::vector<std::size_t> select(const WorkersReport& report, const std::string& codec,
                                const std::string& noise, int workers) {
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const RateRun& r = report.runs[i];
    if (r.codec == codec && r.noise == noise && (workers == 0 || report.runs_workers[i] == workers)) {
      chosen.push_back(i);
    }
  }
  return chosen;
}

// Per codec, noise and K: the final gaps over seeds, their mean and sample
// standard deviation; per codec and noise: the power law in K fitted to
// every seed's final gap (Q-GenX Theorems 3–4 at fixed T).
void summarize(const WorkersConfig& c, WorkersReport& report) {
  for (const auto& noise : c.noises) {
    for (const auto& codec : c.codecs) {
      std::vector<std::pair<double, double>> points;
      for (int k : c.workers) {
        WorkersRow row{codec, noise, k, {}, 0, 0, 0};
        const auto chosen = select(report, codec, noise, k);
        const double n = static_cast<double>(chosen.size());
        for (std::size_t i : chosen) {
          row.gaps.push_back(report.runs[i].points.back().gap);
          row.gamma += report.runs[i].points.back().gamma / n;
          points.emplace_back(k, row.gaps.back());
        }
        std::tie(row.mean, row.spread) = mean_and_spread(row.gaps);
        report.rows.push_back(std::move(row));
      }
      WorkersFit fit{codec, noise, NAN, NAN, theory_workers_slope(noise), points.size()};
      const bool finite = std::all_of(points.begin(), points.end(), [](const auto& p) {
        return p.second > 0 && std::isfinite(p.second);
      });
      if (finite) {
        const vi::PowerFit f = vi::fit_power_law(points);
        fit.slope = f.slope;
        fit.slope_error = f.slope_error;
      }
      report.fits.push_back(fit);
    }
  }
}

std::string csv_text(const WorkersReport& report) {
  std::ostringstream csv;
  csv << "codec,noise,workers,seed," << kPointColumns << "\n" << std::setprecision(17);
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const RateRun& r = report.runs[i];
    for (const auto& point : r.points) {
      csv << '"' << r.codec << "\"," << r.noise << "," << report.runs_workers[i] << "," << r.seed
          << ",";
      write_point_columns(csv, r, point);
      csv << "\n";
    }
  }
  return csv.str();
}

// Per noise: the final gap against K (mean over seeds per codec, with the
// theory's K^slope through the first codec's value at the smallest K), and
// the first codec's gap against T, one line per K.
std::string svg_text(const WorkersConfig& c, const WorkersReport& report) {
  std::vector<PlotPanel> panels;
  const std::string at = "T = " + std::to_string(c.iterations);
  for (const auto& noise : c.noises) {
    PlotPanel by_k{"Final gap against K, " + noise + " noise, " + at + " (" + report.method + ")",
                   "K (workers)", "gap", true, true, {}};
    for (const auto& codec : c.codecs) {
      PlotSeries series{codec, {}, true};
      for (const auto& row : report.rows) {
        if (row.codec == codec && row.noise == noise) series.points.emplace_back(row.workers, row.mean);
      }
      by_k.series.push_back(std::move(series));
    }
    const auto& first = by_k.series.front().points;
    PlotSeries theory{"theory: K^-1/2 absolute (Theorem 3), K^-1 relative (Theorem 4)", {}, false};
    for (const auto& [k, gap] : first) {
      theory.points.emplace_back(k, first.front().second *
                                        std::pow(k / first.front().first, theory_workers_slope(noise)));
    }
    by_k.series.push_back(std::move(theory));
    panels.push_back(std::move(by_k));
  }
  for (const auto& noise : c.noises) {
    PlotPanel by_t{"Gap against T, " + noise + " noise, " + c.codecs.front(), "T (iterations)",
                   "gap", true, true, {}};
    for (int k : c.workers) {
      std::vector<const RateRun*> group;
      for (std::size_t i : select(report, c.codecs.front(), noise, k)) group.push_back(&report.runs[i]);
      by_t.series.push_back({"K = " + std::to_string(k), mean_curve(group), false});
    }
    panels.push_back(std::move(by_t));
  }
  return render_svg(panels);
}

std::string json_text(const WorkersConfig& c, const WorkersReport& report) {
  nlohmann::json workers = c.workers;
  nlohmann::json json = {{"experiment", "qgenx-workers"}, {"method", report.method},
                         {"workers", workers}, {"iterations", c.iterations},
                         {"seeds", c.seeds}, {"seed", c.seed}, {"dimension", 2 * c.game.n},
                         {"sigma", c.game.sigma}, {"keep", c.game.keep}, {"alpha", c.game.alpha},
                         {"radius", c.game.radius}, {"problems", report.problems}};
  json["rows"] = nlohmann::json::array();
  for (const auto& row : report.rows) {
    nlohmann::json gaps = nlohmann::json::array();
    for (double g : row.gaps) gaps.push_back(number_or_null(g));
    json["rows"].push_back({{"codec", row.codec}, {"noise", row.noise}, {"workers", row.workers},
                            {"gaps", gaps}, {"mean", number_or_null(row.mean)},
                            {"spread", number_or_null(row.spread)},
                            {"gamma", number_or_null(row.gamma)}});
  }
  json["fits"] = nlohmann::json::array();
  for (const auto& fit : report.fits) {
    json["fits"].push_back({{"codec", fit.codec}, {"noise", fit.noise},
                            {"slope", number_or_null(fit.slope)},
                            {"slope_error", number_or_null(fit.slope_error)},
                            {"theory_slope", fit.theory_slope}, {"points", fit.points}});
  }
  return json.dump(2) + "\n";
}

void write_outputs(const WorkersConfig& c, WorkersReport& report) {
  report.files = write_experiment_files(c.output, "qgenx-workers", csv_text(report),
                                        json_text(c, report), svg_text(c, report));
}

}  // namespace

std::vector<std::string> default_workers_codecs() {
  return {"fp32", "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed"};
}

// The bounds are symmetric in K and T: 1/√(TK) (Theorem 3) and 1/(KT)
// (Theorem 4), so the exponent of K is that of T.
double theory_workers_slope(const std::string& noise) { return theory_slope(noise); }

void validate(const WorkersConfig& c) {
  vi::parse_method(c.method);
  if (c.workers.size() < 2) {
    throw InvalidArgument("--workers: at least two numbers of workers are needed to fit the "
                          "K-dependence, e.g. 1,2,4,8,16");
  }
  for (std::size_t i = 0; i < c.workers.size(); ++i) {
    if (c.workers[i] < 1 || c.workers[i] > 256) {
      throw InvalidArgument("--workers: each K must be in 1..256 (in-process ranks), not " +
                            std::to_string(c.workers[i]));
    }
    if (i > 0 && c.workers[i] <= c.workers[i - 1]) {
      throw InvalidArgument("--workers: list each K once, in increasing order (e.g. 1,2,4,8,16)");
    }
  }
  if (c.codecs.empty()) throw InvalidArgument("--codec: at least one codec variant is needed");
  for (const auto& spec : c.codecs) make_codec(spec)->check_supported(CodecOperation::allreduce_mean);
  validate_game(c.game, c.noises);
  if (c.iterations < 16) throw InvalidArgument("--iterations must be at least 16");
  if (c.seeds < 1) throw InvalidArgument("--seeds must be at least 1");
  if (c.algorithm == Algorithm::native) throw InvalidArgument("--algo must be ring or halving-doubling");
  if (c.timeout_ms < 1) throw InvalidArgument("--timeout must be at least 1 ms");
}

WorkersReport run_workers_experiment(const WorkersConfig& c, std::ostream* progress) {
  validate(c);
  WorkersReport report;
  report.method = c.method;
  for (int k : c.workers) {
    const auto start = std::chrono::steady_clock::now();
    run_world(c, k, report);
    if (progress) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      *progress << "# K = " << k << ": " << c.noises.size() * c.codecs.size() * c.seeds
                << " runs of T = " << c.iterations << " in " << std::fixed << std::setprecision(1)
                << took.count() << " s" << std::defaultfloat << std::endl;
    }
  }
  summarize(c, report);
  if (!c.output.empty()) write_outputs(c, report);
  return report;
}

void print_workers_report(std::ostream& out, const WorkersReport& report) {
  out << "# qgenx-workers: Q-GenX (" << report.method << "), the final gap against K\n";
  for (const auto& p : report.problems) out << "# " << p << "\n";
  std::size_t width = 8;
  for (const auto& row : report.rows) width = std::max(width, row.codec.size() + 2);
  out << std::left << std::setw(static_cast<int>(width)) << "# codec" << std::setw(10) << "noise"
      << std::right << std::setw(4) << "K" << std::setw(12) << "gap mean" << std::setw(12)
      << "sd" << std::setw(10) << "gamma_T" << "\n";
  for (const auto& row : report.rows) {
    out << std::left << std::setw(static_cast<int>(width)) << row.codec << std::setw(10) << row.noise
        << std::right << std::setw(4) << row.workers << std::scientific << std::setprecision(3)
        << std::setw(12) << row.mean << std::setw(12) << row.spread << std::fixed
        << std::setprecision(4) << std::setw(10) << row.gamma << std::defaultfloat << "\n";
  }
  for (const auto& fit : report.fits) {
    out << "# K-slope " << fit.codec << " " << fit.noise << ": " << std::fixed
        << std::setprecision(3) << fit.slope << " ± " << fit.slope_error << " (theory "
        << fit.theory_slope << ", " << fit.points << " points)" << std::defaultfloat << "\n";
  }
  out << "# gap mean, sd: over seeds at T; gamma_T: the adaptive step at the end (mean);\n"
         "# K-slope: log Gap_T against log K over every seed's final gap, ± its standard\n"
         "# error; theory: Theorem 3 (absolute), Theorem 4 (relative)\n";
  for (const auto& file : report.files) out << "# wrote " << file << "\n";
}

}  // namespace qccl::tools
