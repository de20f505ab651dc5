// Quantized stochastic gradient descent–ascent (QSGDA, Beznosikov et al.
// 2022, the baseline Q-GenX Appendix H.1 compares with): on K ranks, each
// with its own oracle, every rank quantizes its dual vector at the current
// point and all apply the same averaged step,
//   X_{t+1} = X_t − γ_t·(1/K)Σ_k Q(g_k(X_t)),
// with no extrapolation step: one oracle call and one exchange per step,
// half of Q-GenX's dual extrapolation. Step sizes:
// - constant: γ_t = γ (Beznosikov et al.'s QSGDA);
// - adaptive: γ_t = γ·K·(1 + Σ_{i<t} Σ_k ‖V̂_{k,i}‖²)^{−½}, Q-GenX's rule
//   (Theorems 3–4) with the quantized vectors in place of the differences
//   between its two half steps (AdaGrad-norm), from past steps only.
// The same quantizer, oracle draws and exchanges as QGenXSolver
// (dual_exchange.h), so the replicas stay bitwise identical. average() is
// the ergodic average (1/T)Σ_{t≤T} X_t of the points where the oracle was
// called, the counterpart of Q-GenX's (1/T)Σ_t X_{t+½}.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/experiments/qgenx/dual_exchange.h"
#include "qccl/experiments/qgenx/oracle.h"
#include "qccl/experiments/qgenx/qgenx_solver.h"

namespace qccl::vi {

struct SgdaSettings {
  StepRule step_rule = StepRule::constant;
  double step = 0.05;  // γ
  CollectiveOptions collective;
  EncodedBitsHook encoded_bits;  // default: the codec's wire size, no bound
};

class QuantizedSgda {
 public:
  // Every rank constructs it with the same settings, codec spec and
  // problem; comm, oracle and codec must outlive it. Starts at the origin.
  QuantizedSgda(Communicator& comm, const StochasticOracle& oracle, Codec& codec,
                SgdaSettings settings);

  // One step t = iteration() + 1; the oracle's call index is t − 1.
  // Collective. StepReport's squared_difference is Σ_k ‖V̂_{k,t}‖² here.
  StepReport step();

  std::uint64_t iteration() const { return t_; }
  std::span<const double> x() const { return x_; }  // X_{T+1}
  std::vector<double> average() const;             // (1/T)Σ_{t≤T} X_t; X_1 before a step
  double gamma() const { return gamma_; }          // γ_{T+1}
  std::uint64_t replica_checksum() const;
  void check_replicas();  // as QGenXSolver::check_replicas

 private:
  double step_size() const;

  Communicator& comm_;
  const StochasticOracle& oracle_;
  SgdaSettings settings_;
  std::size_t d_;
  DualExchange exchange_;
  double scale_ = 1;
  std::uint64_t t_ = 0;
  double gamma_ = 1, squares_ = 0;
  std::vector<double> x_, sum_, v_, mean_, own_;
};

}  // namespace qccl::vi
