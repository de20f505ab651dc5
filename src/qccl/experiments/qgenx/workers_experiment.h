// `qccl experiment qgenx-workers`: how Q-GenX's gap depends on the number
// of workers K (Q-GenX Theorems 3 and 4). For each K of a list (in-process
// ranks, one world per K), noise, codec and seed it runs Q-GenX (Algorithm
// 1, dual extrapolation by default) for T iterations on the rates
// experiment's problems (qgenx_runs.h) and records the gap of the ergodic
// average. At fixed T the theorems bound the gap by
// - absolute noise, Theorem 3: O((√ε_Q·M + σ)·D²/√(TK)), so Gap ∝ K^−½;
// - relative noise, Theorem 4: O(((c + 1)·ε_Q + c)·D²/(KT)), so Gap ∝ K^−1.
// The K-dependence is fitted as a power law, log Gap_T against log K by
// least squares over every seed's final gap, with the slope's standard
// error, and set beside those exponents.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/collectives/options.h"
#include "qccl/experiments/qgenx/qgenx_runs.h"

namespace qccl::tools {

struct WorkersConfig {
  std::vector<int> workers{1, 2, 4, 8, 16};  // K, one in-process world each
  std::string method = "de";                  // da | de | optda
  std::vector<std::string> codecs;            // default: default_workers_codecs()
  std::vector<std::string> noises{"absolute", "relative"};
  std::size_t iterations = 1024;  // T
  std::size_t seeds = 3;
  std::uint64_t seed = 0;
  GameSettings game;
  std::string output;  // directory for qgenx-workers.{csv,json,svg}
  Algorithm algorithm = Algorithm::ring;
  long timeout_ms = 300000;  // every wait of every rank
};

// fp32 and the qgenx quantizer at 4 bits, uniform levels, fixed width, one
// ∞-norm per vector (Definition 1).
std::vector<std::string> default_workers_codecs();

// One K for a codec and noise: the final gaps over seeds.
struct WorkersRow {
  std::string codec, noise;
  int workers = 0;
  std::vector<double> gaps;  // per seed, at T
  double mean = 0, spread = 0;  // arithmetic mean and sample standard deviation over seeds
  // γ_{T+1}, the adaptive step at the end, mean over seeds: Theorem 4's
  // proof bounds E[1/γ_{T+1}] by O(c/(Kβ)), which is where its 1/K comes from.
  double gamma = 0;
};

// The fitted K-dependence for a codec and noise.
struct WorkersFit {
  std::string codec, noise;
  double slope = 0, slope_error = 0, theory_slope = 0;
  std::size_t points = 0;
};

struct WorkersReport {
  std::string method;
  std::vector<std::string> problems;  // descriptions, one per noise
  // Every run's trajectory, K by K (RateRun has no K: runs_workers says it).
  std::vector<RateRun> runs;
  std::vector<int> runs_workers;
  std::vector<WorkersRow> rows;
  std::vector<WorkersFit> fits;
  std::vector<std::string> files;
};

// The exponent of K in the theorems' bound at fixed T: −½ (absolute noise,
// Theorem 3) and −1 (relative noise, Theorem 4).
double theory_workers_slope(const std::string& noise);

// InvalidArgument naming the option, before any rank starts.
void validate(const WorkersConfig& config);
// Runs every K in process (threads) and writes the files; `progress`, if
// given, gets a line per K.
WorkersReport run_workers_experiment(const WorkersConfig& config, std::ostream* progress = nullptr);
void print_workers_report(std::ostream& out, const WorkersReport& report);

}  // namespace qccl::tools
