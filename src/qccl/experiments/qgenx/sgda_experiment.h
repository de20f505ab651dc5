// `qccl experiment qgenx-sgda`: Q-GenX against quantized SGDA, the
// comparison of Q-GenX Appendix H.1 (Fig. 4) with QSGDA of Beznosikov et
// al. (2022), the one method there without explicit variance reduction.
// Every method runs on the same ranks, problems, oracles and quantizer
// (one codec spec for all) for T iterations, and rank 0 records the gap of
// each method's ergodic average on the rates experiment's two problems
// (qgenx_runs.h): absolute noise on a merely monotone quadratic game,
// relative noise on a nearly bilinear co-coercive game. The paper's
// point: with its extra-gradient template Q-GenX makes steady progress
// without variance reduction; SGDA, with no extrapolation, is not
// guaranteed to converge on monotone games (it spirals on bilinear ones).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/experiments/qgenx/qgenx_runs.h"

namespace qccl::tools {

struct SgdaConfig {
  // qgenx-de, qgenx-optda, qgenx-da (Q-GenX, Algorithm 1, adaptive step);
  // sgda (constant step γ = sgda_step, Beznosikov et al.'s QSGDA),
  // sgda-adaptive (Q-GenX's adaptive rule on SGDA, scale sgda_step·K).
  std::vector<std::string> methods{"qgenx-de", "sgda", "sgda-adaptive"};
  std::string codec = "qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed";
  std::vector<std::string> noises{"absolute", "relative"};
  std::size_t iterations = 4096;  // T
  std::size_t seeds = 3;
  std::uint64_t seed = 0;
  GameSettings game;
  double sgda_step = 0.1;
  double fit_octaves = 3;
  std::string output;  // directory for qgenx-sgda.{csv,json,svg} (rank 0)
  Algorithm algorithm = Algorithm::ring;
};

// A method on a noise: the final gaps over seeds and the tail slope.
struct SgdaSummary {
  std::string method, noise;
  std::vector<double> gaps;     // per seed, at T (infinite: diverged)
  double mean = 0, spread = 0;  // arithmetic mean and sample standard deviation
  double slope = 0;             // log Gap against log T over the tail, geometric mean over seeds
  double theory_slope = 0;      // Q-GenX's (Theorems 3–4); NaN for SGDA, which has none here
  std::size_t diverged = 0;     // seeds whose run stopped being finite
};

struct SgdaReport {
  int ranks = 0;
  std::vector<std::string> problems;  // one per noise
  std::vector<RateRun> runs;          // RateRun::codec holds the method's name
  std::vector<SgdaSummary> summaries;
  std::vector<std::string> files;
};

void validate(const SgdaConfig& config);
// Runs on every rank of `comm`; rank 0 writes the files and gets the report.
SgdaReport run_sgda_experiment(Communicator& comm, const SgdaConfig& config);
void print_sgda_report(std::ostream& out, const SgdaReport& report);

}  // namespace qccl::tools
