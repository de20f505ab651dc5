// `qccl experiment intsgd-logreg`: IntSGD Appendix C.5 / Figure 6 —
// ℓ2-regularized logistic regression split across ranks by original index
// (heterogeneous data), solved by IntGD, IntDIANA and VR-IntDIANA (and
// minibatch IntSGD on request), recording per iteration the objective gap
// f(x_k) − f* and the largest integers communicated.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl::tools {

struct LogregConfig {
  // breast-cancer | fashion-mnist[:DIR] | libsvm:PATH | csv:PATH | synthetic:ROWSxFEATURES
  std::string data = "breast-cancer";
  std::string normalization;  // none | unit-rows | standardize; empty: the data set's default
  int label_column = -1;      // csv: the label's column (−1: last)
  double lambda = 0;          // 0: 5/N (Table 4's λ are 3.2/N to 5/N)
  std::vector<std::string> methods{"intgd", "intdiana", "vr-intdiana"};
  double passes = 300;        // budget in #grad/(m·n), the paper's x axis
  std::size_t max_iterations = 200000;
  std::string wire = "int64";  // int64: watch integers grow without clipping
  double epsilon = 0;          // Figure 6: ε = 0
  double beta = 0.9;           // IntGD/IntSGD moving average (IntDIANA: 0, Algorithm 3)
  double batch_fraction = 0.05;  // τ = 5% of the local data (C.5), p = τ/m for L-SVRG
  double step = 0;             // 0: 1/(2·max_l L_il), the same for every method
  std::uint64_t seed = 0;
  std::string output;          // directory for the CSV, SVG and JSON (rank 0)
  Algorithm algorithm = Algorithm::ring;
};

struct LogregMethodSummary {
  std::string method, codec;
  std::size_t iterations = 0;
  double grads_per_sample = 0;
  double final_gap = 0;
  std::uint64_t largest_sent = 0;       // over every integer step
  std::uint64_t largest_sent_late = 0;  // over the last 10% of the iterations
  std::uint64_t largest_sum = 0;        // largest |Σ_i Q(g_i)|
  std::uint64_t clipped = 0;            // coordinates clipped, summed over ranks and steps
};

struct LogregReport {
  std::string dataset;
  std::size_t samples = 0, features = 0;
  int ranks = 0;
  double lambda = 0, step = 0, f_star = 0, f_star_gradient_norm = 0;
  std::vector<LogregMethodSummary> methods;
  std::vector<std::string> files;  // written by rank 0
};

// Runs on every rank of `comm`; rank 0 computes f*, writes the files and
// gets the full report (other ranks get theirs without f*).
LogregReport run_logreg_experiment(Communicator& comm, const LogregConfig& config);
void print_logreg_report(std::ostream& out, const LogregReport& report);

// Bits per coordinate for integers in [−v, v]: log2(2v + 1) (the paper's
// "fewer than 3 bits" for IntDIANA is v <= 3); a fixed-width wire needs
// ⌈log2(2v + 1)⌉.
double bits_for(std::uint64_t largest);

}  // namespace qccl::tools
