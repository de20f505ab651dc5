// The statistics QAda fits levels to (Q-GenX §3.3) and that estimate the
// symbols' probabilities for entropy coding (Proposition 2, Appendix E):
// the distribution of normalized coordinates u = |v_i| / ‖v_b‖_q of the
// vectors (buckets) a rank quantizes, each weighted by λ_b ∝ ‖v_b‖_q² —
// the weighted sum of conditional CDFs F of (QAda) — kept as moments per
// cell of a fixed grid.
//
// The grid: 0, 64 cells per octave from 2^-24 to 1, and the current levels
// themselves as edges. Within a cell the moments Σλ, Σλu, Σλu² are exact
// sums, and σ²_Q(u) = (b − u)(u − a) is a quadratic in u, so the objective
// of (QAda) for any levels that lie on cell edges,
//   Σ_j ∫_{ℓ_j}^{ℓ_{j+1}} σ²_Q(u) dF(u) = Σ_j Σ_cells (−Σλu² + (a+b)Σλu − abΣλ),
// is exactly Eq. (3.1)'s variance of the sampled vectors: no binning error.
// Ranks add their statistics (every rank the same sums in rank order), so
// every rank fits the same levels from the same numbers.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "qccl/codecs/quantizers/quantization_levels.h"

namespace qccl {

class LevelStatistics {
 public:
  // Empty statistics on the grid refined by `levels` (check_levels holds):
  // the octave grid above, or with even_cells > 0 that many equal cells of
  // [0, 1] (for coordinates spread over the whole interval, as min-max
  // normalized ones are).
  explicit LevelStatistics(std::span<const double> levels, std::size_t even_cells = 0);

  // Adds the coordinates of v, cut into buckets of `bucket` elements (0:
  // one bucket), each normalized by its L_q norm and weighted by its square.
  // The values must be finite.
  void add(std::span<const float> v, std::size_t bucket, NormOrder q);
  // One normalized coordinate u in [0, 1] of a vector weighted `weight`.
  void add_coordinate(double u, double weight);
  // The sums as a flat vector: per cell Σλ, Σλu, Σλu², count, Σu.
  const std::vector<double>& sums() const { return sums_; }
  // The cells that hold coordinates, as (cell, five moments) sextuples: what ranks exchange, at most six values per
  // coordinate however fine the grid. Adding them gives the dense sums'
  // bits (the other cells add zeros). InvalidArgument for a cell index
  // that is not one, or a length that is no whole number of sextuples.
  std::vector<double> occupied_cells() const;
  void add_occupied_cells(std::span<const double> cells);

  // Zero sums on the same grid.
  void clear();
  std::span<const double> edges() const { return edges_; }
  double coordinates() const;

  // Eq. (3.1) summed over every added vector, for levels on cell edges
  // (the levels given at construction always are).
  double variance(std::span<const double> levels) const;
  // Proposition 2's p_j, each coordinate counted once: the probability that
  // a coordinate is quantized to ℓ_j. Sums to 1 (uniform when empty).
  std::vector<double> symbol_probabilities(std::span<const double> levels) const;
  // QAda: the levels that minimise variance(), by exact coordinate descent
  // over cell edges from `start` (Faghri et al. 2020's one-level-at-a-time
  // update): each level moves to the edge between its neighbours that
  // minimises the cost of its two intervals, until no level moves. Every
  // move lowers the objective, so variance(result) <= variance(start).
  std::vector<double> fit_levels(std::span<const double> start) const;

 private:
  // Per cell c in [edges[c], edges[c+1]]: Σλ, Σλu, Σλu², count, Σu.
  static constexpr std::size_t kMoments = 5;
  double moment(std::size_t cell, std::size_t k) const { return sums_[cell * kMoments + k]; }
  std::size_t edge_of(double level) const;
  // ∫_{edges[a]}^{edges[b]} σ² dF for the interval between those edges.
  long double interval_cost(std::size_t a, std::size_t b) const;

  std::vector<double> edges_;
  std::vector<double> sums_;
  // Prefix sums over cells of Σλ, Σλu, Σλu² (long double: the costs are
  // differences of them), rebuilt by prefix().
  mutable std::vector<long double> prefix_;
  void prefix() const;
};

}  // namespace qccl
