// What the Q-GenX experiments share (qgenx-rates, qgenx-workers,
// qgenx-sgda): the two test problems with their noise, the iterations at
// which the gap is recorded, the bits a codec encoded, and running a solver
// for T iterations while rank 0 records the gap of its ergodic average.
// - absolute noise (Assumption 2): a merely monotone convex–concave
//   quadratic game with bounded additive noise of variance σ² (Theorem 3);
// - relative noise (Assumption 3): a bilinear game regularised by α > 0,
//   co-coercive (Assumption 4), under random coordinate sampling with
//   c = (1 − p)/p (Theorem 4, Appendix J).
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/gap.h"
#include "qccl/experiments/qgenx/oracle.h"
#include "qccl/experiments/qgenx/problems.h"
#include "qccl/experiments/qgenx/qgenx_solver.h"

namespace qccl::tools {

struct GameSettings {
  std::size_t n = 16;    // each player's dimension: d = 2n
  double sigma = 1.0;    // absolute noise: E‖U‖² = σ²
  double keep = 0.5;     // relative noise: coordinate keep probability p
  double alpha = 1e-4;   // the relative-noise game's regularisation (docs/qgenx.md)
  double radius = 1.0;   // the gap's ball around the solution
};

struct RatePoint {
  std::size_t iteration = 0;
  double gap = 0, distance = 0, gamma = 0;
  // Whether the gap's maximiser lies on the ball's sphere: the gap is then
  // linear in the residual (R‖g‖ − αR²); inside, it is quadratic (‖g‖²/(4α)).
  bool boundary = false;
};

struct RateRun {
  std::string codec, noise;
  std::uint64_t seed = 0;
  std::vector<RatePoint> points;
  double bits_per_coordinate = 0;       // encoded by a rank, mean over ranks and exchanges
  double sent_bits_per_coordinate = 0;  // transport data bits a rank sent per coordinate exchanged
  double bound_bits_per_coordinate = 0;  // the codec's bound (NaN: none)
  // The iteration at which the run's vectors stopped being finite (a
  // diverging method); 0: it ran to T. Later points have an infinite gap.
  std::size_t diverged_at = 0;
};

// The problem and noise of one run (see the top of this file).
struct Setup {
  vi::Problem problem;
  vi::NoiseSettings noise;
  std::string description;  // the problem's, with the noise
};
Setup make_setup(const GameSettings& game, const std::string& noise, std::uint64_t seed);

// InvalidArgument naming the option: noises other than absolute and
// relative, n < 2, σ, α or the radius not positive, p outside (0, 1).
void validate_game(const GameSettings& game, const std::vector<std::string>& noises);

// The slopes of Gap against T: Theorem 3 (absolute noise, O(1/√T)) and
// Theorem 4 (relative noise with co-coercivity, O(1/T)).
double theory_slope(const std::string& noise);

// T = ⌊2^(j/4)⌋ for j = 0, 1, … (four per octave, duplicates dropped), and T.
std::vector<std::size_t> record_points(std::size_t iterations);

// What the codec encoded in its latest step: the qgenx codec's own count
// (entropy-coded symbols, headers and padding included) and Q-GenX
// Theorem 2's bound; for other codecs, their fixed wire size and no bound.
vi::EncodedBits encoded_bits(const Codec& codec, std::size_t count);

// Rank 0's record at iteration t: the gap of `average` on the ball, its
// distance to z*, whether the maximiser is on the sphere.
RatePoint measure(const Setup& setup, const vi::GapFunction& gap, double radius,
                  const std::vector<double>& average, std::size_t t, double gamma);

// The geometric mean over runs (seeds) of the gap at each recorded T, as
// (T, gap); infinite where a run diverged.
std::vector<std::pair<double, double>> mean_curve(const std::vector<const RateRun*>& runs);

// The slope of log Gap against log T over T ∈ [iterations/2^octaves,
// iterations], finite points only; NaN with fewer than two.
double tail_slope(const std::vector<std::pair<double, double>>& curve, std::size_t iterations,
                  double octaves);

// The arithmetic mean and the sample standard deviation (NaN for fewer
// than two values) of `values`: a row's mean and spread over seeds.
std::pair<double, double> mean_and_spread(const std::vector<double>& values);

// JSON has no NaN or infinity: such numbers are written as null.
nlohmann::json number_or_null(double v);

// The CSV columns every experiment writes after its own (the run's
// identity), one row per recorded point, and that row's part.
extern const char* const kPointColumns;
void write_point_columns(std::ostream& out, const RateRun& run, const RatePoint& point);

// Writes DIR/NAME.csv, .json and .svg, each atomically; returns their paths.
std::vector<std::string> write_experiment_files(const std::string& directory, const std::string& name,
                                                const std::string& csv, const std::string& json,
                                                const std::string& svg);

// Collective: MismatchError unless every rank has the same `settings` text
// and `variants` (the options that shape the calls), before any run.
void check_settings_agree(Communicator& comm, const std::string& settings,
                          const std::vector<std::string>& variants);

// One Q-GenX run (Algorithm 1) on `setup`: the method, the codec spec
// (made with the run's seed and `variant` as its stream), T and the gap's
// radius.
struct QGenXRunSpec {
  std::string method = "de";
  std::string codec;
  std::string noise;
  std::uint64_t seed = 0;
  std::size_t variant = 0;
  std::size_t iterations = 0;
  double radius = 1;
  Algorithm algorithm = Algorithm::ring;
};
RateRun run_qgenx(Communicator& comm, const Setup& setup, const QGenXRunSpec& spec);

// Runs `solver` (QGenXSolver or QuantizedSgda) on every rank to T =
// iterations; rank 0 records the gap of its ergodic average at the record
// points. A run whose vectors stop being finite (NonFiniteError, raised on
// every rank alike) ends there: diverged_at is set, later points have an
// infinite gap. Fills run's points and bits.
template <typename Solver>
void run_trajectory(Communicator& comm, Solver& solver, const Setup& setup, double radius,
                    std::size_t iterations, RateRun& run);

// Sums the per-rank totals (encoded bits, bound, data bytes, exchanges)
// over ranks into run's bits per coordinate.
void finish_bits(Communicator& comm, const Setup& setup, std::vector<double> totals, RateRun& run);

template <typename Solver>
void run_trajectory(Communicator& comm, Solver& solver, const Setup& setup, double radius,
                    std::size_t iterations, RateRun& run) {
  const vi::GapFunction gap(setup.problem.op, {vi::DomainShape::ball, setup.problem.solution, radius});
  std::vector<double> totals(4, 0.0);
  for (std::size_t t : record_points(iterations)) {
    while (run.diverged_at == 0 && solver.iteration() < t) {
      try {
        const vi::StepReport r = solver.step();
        totals[0] += r.encoded_bits;
        totals[1] += r.bound_bits;
        totals[2] += static_cast<double>(r.data_bytes);
        totals[3] += static_cast<double>(r.vector_exchanges);
      } catch (const NonFiniteError&) {
        run.diverged_at = solver.iteration() + 1;
      }
    }
    if (comm.rank() != 0) continue;
    if (run.diverged_at != 0) {
      run.points.push_back({t, INFINITY, INFINITY, solver.gamma(), true});
    } else {
      run.points.push_back(measure(setup, gap, radius, solver.average(), t, solver.gamma()));
    }
  }
  if (run.diverged_at == 0) solver.check_replicas();
  finish_bits(comm, setup, std::move(totals), run);
}

}  // namespace qccl::tools
