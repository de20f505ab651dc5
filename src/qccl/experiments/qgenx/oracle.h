// Stochastic first-order oracles g(x; ω) = A(x) + U(x; ω) (Q-GenX Eq. 2.1)
// under the two noise models of §2:
// - absolute noise (Assumption 2): U independent of x, bounded, zero mean,
//   E‖U‖² = σ²;
// - relative noise (Assumption 3): E‖U‖² = c·‖A(x)‖², vanishing at a
//   solution — random coordinate sampling (Appendix J, Example J.1,
//   generalised to a random subset) or random player updating (Example J.2).
// Every draw ω is a pure function of (seed, rank, call index): a run is
// reproducible from its seed, ranks draw independent noise, and a resumed
// run draws the same noise as an uninterrupted one.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "qccl/experiments/qgenx/operator.h"

namespace qccl::vi {

enum class NoiseKind {
  none,         // g = A(x)
  absolute,     // U_i uniform in [−a, a], a = σ·√(3/d): E‖U‖² = σ², ‖U‖ ≤ √3·σ
  coordinates,  // g_i = A_i(x)·ξ_i/p, ξ_i ~ Bernoulli(p) i.i.d.: c = (1 − p)/p
  players,      // one of the two players, each with probability ½, gets
                // 2·(its block of A), the other 0: c = 1
};

// "none", "absolute", "coordinates", "players"; parse_noise_kind is the
// inverse (InvalidArgument naming the valid ones).
std::string to_string(NoiseKind kind);
NoiseKind parse_noise_kind(std::string_view text);

struct NoiseSettings {
  NoiseKind kind = NoiseKind::none;
  double sigma = 0;  // absolute: E‖U‖² = σ²
  double keep = 0.5;  // coordinates: the probability p a coordinate is kept
  // Whether the noise is relative (Assumption 3) rather than absolute.
  bool relative() const { return kind == NoiseKind::coordinates || kind == NoiseKind::players; }
};

class StochasticOracle {
 public:
  // `split`: where the second player's block starts (players noise).
  StochasticOracle(const Operator& op, NoiseSettings noise, std::uint64_t seed, std::size_t split);

  // out = g(x; ω) with ω keyed by (seed, rank, call).
  void sample(std::span<const double> x, int rank, std::uint64_t call, std::span<double> out) const;
  // E_ω‖U(x; ω)‖², exactly: σ² (absolute), c·‖A(x)‖² (relative), 0 (none).
  double noise_variance(std::span<const double> x) const;
  // c of Assumption 3 for relative noise, else 0.
  double relative_constant() const;

  const Operator& op() const { return op_; }
  const NoiseSettings& noise() const { return noise_; }
  std::uint64_t seed() const { return seed_; }

 private:
  const Operator& op_;
  NoiseSettings noise_;
  std::uint64_t seed_;
  std::size_t split_;
};

}  // namespace qccl::vi
