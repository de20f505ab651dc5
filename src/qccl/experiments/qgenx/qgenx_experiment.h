// `qccl experiment qgenx-rates`: Q-GenX's rates (Theorems 3 and 4) measured.
// Q-GenX (Algorithm 1; dual extrapolation by default) runs on the ranks for
// T iterations on two problems:
// - absolute noise (Assumption 2): a merely monotone convex–concave
//   quadratic game with bounded additive noise of variance σ²; Theorem 3:
//   E Gap = O(1/√T), slope −½ in log–log;
// - relative noise (Assumption 3): a bilinear game regularised by α > 0,
//   co-coercive (Assumption 4, β = α/(α² + s_max²)), with random coordinate
//   sampling (c = (1 − p)/p); Theorem 4: E Gap = O(1/T), slope −1. The
//   gap is linear in the residual only while its maximiser lies on the
//   ball's sphere (‖Mᵀe‖ ≥ 2αR), so the default α is small; with a larger
//   α the tail turns quadratic and the slope to −2 (docs/qgenx.md).
// For each codec variant, noise and seed it records the gap of the ergodic
// average (1/T)Σ_t X_{t+½} at log-spaced T, fits the slope of log Gap
// against log T over the tail (the geometric mean over seeds), and reports
// the bits per coordinate each rank encoded (and the codec's bound, where
// it has one: Theorem 2 for qgenx).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/experiments/qgenx/qgenx_runs.h"

namespace qccl::tools {

struct RatesConfig {
  std::string method = "de";  // da | de | optda
  // Codec specs, one variant each.
  std::vector<std::string> codecs;
  std::vector<std::string> noises{"absolute", "relative"};
  std::size_t iterations = 4096;  // T, at least 16
  std::size_t seeds = 2;
  std::uint64_t seed = 0;
  std::size_t n = 16;        // each player's dimension: d = 2n
  double sigma = 1.0;        // absolute noise: E‖U‖² = σ²
  double keep = 0.5;         // relative noise: coordinate keep probability p
  double alpha = 1e-4;       // the relative-noise game's regularisation (see docs/qgenx.md)
  double radius = 1.0;       // the gap's ball around the solution
  double fit_octaves = 3;    // the slope is fitted over T ∈ [T/2^octaves, T]
  std::string output;        // directory for qgenx-rates.{csv,json,svg} (rank 0)
  Algorithm algorithm = Algorithm::ring;

  GameSettings game() const { return {n, sigma, keep, alpha, radius}; }
};

// The default variants: fp32 and the qgenx quantizer with uniform levels
// and QAda, each with fixed-length and Huffman codes.
std::vector<std::string> default_rate_codecs();

struct RateSummary {
  std::string codec, noise;
  double slope = 0, theory_slope = 0;
  std::vector<double> seed_slopes;
  double final_gap = 0;  // geometric mean over seeds at T
  double boundary_fraction = 0;  // of the fitted points (all seeds) with the maximiser on the sphere
  double bits_per_coordinate = 0, sent_bits_per_coordinate = 0, bound_bits_per_coordinate = 0;
};

struct RatesReport {
  int ranks = 0;
  std::string method;
  std::vector<std::string> problems;  // descriptions, one per noise
  std::vector<RateRun> runs;
  std::vector<RateSummary> summaries;
  std::vector<std::string> files;
};

// Checks the settings (InvalidArgument naming the option) before any rank
// starts.
void validate(const RatesConfig& config);
// Runs on every rank of `comm`; rank 0 computes the gaps, writes the files
// and gets the full report.
RatesReport run_rates_experiment(Communicator& comm, const RatesConfig& config);
void print_rates_report(std::ostream& out, const RatesReport& report);

}  // namespace qccl::tools
