// Q-GenX (Q-GenX §3.1, Algorithm 1, Eq. Q-GenX): quantized generalized
// extra-gradient on K ranks. Each rank k draws stochastic dual vectors from
// its own oracle, the codec quantizes them (V̂ = Q(V)) and averages them
// across ranks, and every rank applies the same update:
//   X_{t+½} = X_t − (γ_t/K)·Σ_k V̂_{k,t}
//   Y_{t+1} = Y_t − (1/K)·Σ_k V̂_{k,t+½}
//   X_{t+1} = X_0 + γ_{t+1}·Y_{t+1}          (Y_1 = 0, so X_1 = X_0)
// with three choices of V̂_{k,t} (§3.1 Examples 3.1–3.3, Appendix C):
// - dual averaging (DA): V̂_{k,t} ≡ 0, so X_{t+½} = X_t; one exchange per
//   step, of V_{k,t+½} = g_k(X_{t+½});
// - dual extrapolation (DE, extra-gradient): V̂_{k,t} = Q(g_k(X_t)) and
//   V̂_{k,t+½} = Q(g_k(X_{t+½})); two exchanges per step;
// - optimistic dual averaging (OptDA): V̂_{k,t} = V̂_{k,t−½}, the previous
//   step's quantized half-step vector (0 at t = 1), reused, not resent; one
//   exchange per step.
//
// Anchor. The paper writes X_{t+1} = γ_{t+1}·Y_{t+1} with X_1 = 0 ("for
// notation simplicity", Appendix F footnote). With an anchor X_0 the
// iteration is the paper's applied to A'(u) = A(X_0 + u) in u = X − X_0,
// so Theorems 3–4 hold with D² = sup_{X∈C} ‖X − X_0‖² as they state it.
// The default anchor is the origin, the paper's own choice.
//
// Step size (Theorems 3–4):
//   γ_t = K·(1 + Σ_{i<t} Σ_k ‖V̂_{k,i} − V̂_{k,i+½}‖²)^{−½}.
// Each rank computes ‖V̂_{k,i} − V̂_{k,i+½}‖² from its own decoded
// contributions (the codec's `own` output, Q(x) of this rank); the sum over
// k is one exchange per step that gathers every rank's value exactly and
// sums them in rank order, so γ is bitwise identical on every rank. It uses
// past steps only. Options: a constant step γ_t = scale, and the scale
// itself: step_base·K (scale_by_ranks, the paper's K) or step_base.
//
// Aggregation: (1/K)Σ_k V̂_k is the codec's allreduce_mean of fp32 copies
// of the fp64 dual vectors; every rank gets identical bits, and the
// iterates are fp64, so the replicas stay bitwise identical
// (check_replicas() verifies it).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/experiments/qgenx/dual_exchange.h"
#include "qccl/experiments/qgenx/oracle.h"

namespace qccl::vi {

enum class Method { dual_averaging, dual_extrapolation, optimistic };
// "da", "de", "optda"; parse_method is the inverse.
std::string to_string(Method method);
Method parse_method(std::string_view text);

enum class StepRule { adaptive, constant };

struct SolverSettings {
  Method method = Method::dual_extrapolation;
  StepRule step_rule = StepRule::adaptive;
  double step_base = 1.0;
  bool scale_by_ranks = true;  // the scale is step_base·K (the paper), else step_base
  std::vector<double> anchor;  // X_0; empty: the origin
  CollectiveOptions collective;
  // Default: codec.wire_bytes(count)·8 bits, no bound.
  EncodedBitsHook encoded_bits;
};

// One step t (1-based) as this rank saw it.
struct StepReport {
  std::uint64_t iteration = 0;
  double gamma = 0;       // γ_t, used in this step
  double next_gamma = 0;  // γ_{t+1}
  // Σ_k ‖V̂_{k,t} − V̂_{k,t+½}‖² (adaptive rule; 0 with a constant step).
  double squared_difference = 0;
  std::uint64_t vector_exchanges = 0;  // codec calls: DA 1, DE 2, OptDA 1
  std::uint64_t oracle_calls = 0;      // on this rank: DA 1, DE 2, OptDA 1
  std::uint64_t data_bytes = 0;        // this rank's transport data bytes
  double encoded_bits = 0;             // this rank's encodings, summed over the calls
  double bound_bits = 0;               // their bounds, summed (NaN if unknown)
};

class QGenXSolver {
 public:
  // Every rank constructs it with the same settings, codec spec and
  // problem; the oracle differs by rank only through its draws. comm,
  // oracle and codec must outlive the solver.
  QGenXSolver(Communicator& comm, const StochasticOracle& oracle, Codec& codec,
              SolverSettings settings);

  // One iteration t = iteration() + 1 of Algorithm 1. Collective. A step
  // that throws (a NonFiniteError from a diverging run, a communication
  // failure) leaves the state partly updated: load a saved state to go on.
  StepReport step();

  std::uint64_t iteration() const { return t_; }  // steps done, T
  std::span<const double> x() const { return x_; }  // X_{T+1}
  std::span<const double> half() const { return half_; }  // X_{T+½}
  // The ergodic average (1/T)·Σ_{t≤T} X_{t+½} (Theorems 3–4); X_0 before
  // the first step.
  std::vector<double> average() const;
  double gamma() const { return gamma_; }  // γ_{T+1}
  double scale() const { return scale_; }  // γ_1
  const SolverSettings& settings() const { return settings_; }

  // The state that persists across steps — X, Y, the half step, the
  // average's sum, γ and its sum of squares, OptDA's previous vectors, and
  // the codec's state and step — for checkpoints: load_state(save_state())
  // on a fresh solver (same settings, codec spec and oracle) continues
  // bitwise as the original would. Per rank (OptDA's own vector differs).
  std::vector<std::byte> save_state() const;
  void load_state(std::span<const std::byte> state);

  // A checksum of the state every rank must share (not OptDA's own vector).
  std::uint64_t replica_checksum() const;
  // Collective: MismatchError on every rank, naming the ranks, unless every
  // rank's replica_checksum() is rank 0's.
  void check_replicas();

 private:
  void exchange(std::span<const double> v, std::span<double> mean, std::span<double> own,
                StepReport& report);
  void draw(std::span<const double> at, std::uint64_t call, std::span<double> out,
            StepReport& report);
  double step_size() const;
  std::string settings_digest() const;

  Communicator& comm_;
  const StochasticOracle& oracle_;
  Codec& codec_;
  SolverSettings settings_;
  std::size_t d_;
  DualExchange exchange_;
  double scale_ = 1;
  std::uint64_t t_ = 0;
  double gamma_ = 1, squares_ = 0;
  std::vector<double> anchor_, x_, y_, half_, half_sum_;
  // V̄_{t−½} and this rank's V̂_{k,t−½} (OptDA's reused vectors).
  std::vector<double> previous_mean_, previous_own_;
  // Scratch.
  std::vector<double> v_, mean_, own_, mean_half_, own_half_;
};

}  // namespace qccl::vi
