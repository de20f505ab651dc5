#include "qccl/experiments/qgenx/oracle.h"

#include <cmath>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::vi {
namespace {

constexpr std::uint64_t kOracleBucket = 0x0AC1E;

}  // namespace

std::string to_string(NoiseKind kind) {
  switch (kind) {
    case NoiseKind::none: return "none";
    case NoiseKind::absolute: return "absolute";
    case NoiseKind::coordinates: return "coordinates";
    case NoiseKind::players: return "players";
  }
  return "?";
}

NoiseKind parse_noise_kind(std::string_view text) {
  for (NoiseKind kind : {NoiseKind::none, NoiseKind::absolute, NoiseKind::coordinates,
                         NoiseKind::players}) {
    if (text == to_string(kind)) return kind;
  }
  throw InvalidArgument("unknown noise '" + std::string(text) +
                        "'; valid: none, absolute, coordinates, players");
}

StochasticOracle::StochasticOracle(const Operator& op, NoiseSettings noise, std::uint64_t seed,
                                   std::size_t split)
    : op_(op), noise_(noise), seed_(seed), split_(split) {
  if (noise_.kind == NoiseKind::absolute && !(noise_.sigma >= 0 && std::isfinite(noise_.sigma))) {
    throw InvalidArgument("absolute noise needs sigma >= 0, finite");
  }
  if (noise_.kind == NoiseKind::coordinates && !(noise_.keep > 0 && noise_.keep <= 1)) {
    throw InvalidArgument("coordinate sampling needs a keep probability p in (0, 1]");
  }
  if (noise_.kind == NoiseKind::players && !(split_ > 0 && split_ < op_.dimension())) {
    throw InvalidArgument("random player updating needs two non-empty player blocks");
  }
}

// g(x; ω) = A(x) + U(x; ω) (Q-GenX §2, Eq. 2.1) under Assumption 2
// (absolute) or Assumption 3 (relative: Appendix J, Examples J.1–J.2).
void StochasticOracle::sample(std::span<const double> x, int rank, std::uint64_t call,
                              std::span<double> out) const {
  op_.apply(x, out);
  // The data stream, in a bucket of its own: problem generation (dense.cc)
  // draws from bucket 0, so a problem and its oracle may share a seed.
  const CounterRng rng(seed_, call, kOracleBucket, static_cast<std::uint64_t>(rank), RngStream::data);
  const std::size_t d = out.size();
  // 53-bit uniform in [0, 1) for counter i.
  const auto uniform = [&](std::uint64_t i) { return static_cast<double>(rng.bits64(i) >> 11) * 0x1p-53; };
  switch (noise_.kind) {
    case NoiseKind::none:
      return;
    case NoiseKind::absolute: {
      const double a = noise_.sigma * std::sqrt(3.0 / static_cast<double>(d));
      for (std::size_t i = 0; i < d; ++i) out[i] += a * (2.0 * uniform(i) - 1.0);
      return;
    }
    case NoiseKind::coordinates: {
      const double scale = 1.0 / noise_.keep;
      for (std::size_t i = 0; i < d; ++i) out[i] = uniform(i) < noise_.keep ? out[i] * scale : 0.0;
      return;
    }
    case NoiseKind::players: {
      const bool first = (rng.bits64(0) >> 63) == 0;
      for (std::size_t i = 0; i < d; ++i) out[i] = (i < split_) == first ? 2.0 * out[i] : 0.0;
      return;
    }
  }
}

double StochasticOracle::relative_constant() const {
  switch (noise_.kind) {
    case NoiseKind::coordinates: return (1.0 - noise_.keep) / noise_.keep;
    case NoiseKind::players: return 1.0;
    default: return 0.0;
  }
}

double StochasticOracle::noise_variance(std::span<const double> x) const {
  if (noise_.kind == NoiseKind::none) return 0.0;
  if (noise_.kind == NoiseKind::absolute) return noise_.sigma * noise_.sigma;
  // Coordinates: Σ_i A_i²·(1/p − 1). Players: each block is 2·A_j or 0 with
  // probability ½, so Σ_j ‖A_j‖²·(2 − 1) = ‖A‖².
  std::vector<double> a(op_.dimension());
  op_.apply(x, a);
  return relative_constant() * squared_norm(a);
}

}  // namespace qccl::vi
