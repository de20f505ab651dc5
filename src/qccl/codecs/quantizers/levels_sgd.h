// Learned quantization levels by QSDP's own method (Markov et al.,
// arXiv:2302.02390, §5.2, Algorithm 2 and Appendix C): gradient steps on
// the nearest-rounding error. Each value finds its closest level (line 5,
// find_closest) and moves that level towards itself, q ← q − α(q − v)
// (line 6), with α = 0.01 and the values drawn in batches of 1024
// (Appendix C). The alternative, LevelStatistics::fit_levels, minimises
// stochastic rounding's variance exactly by coordinate descent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/common/counter_rng.h"

namespace qccl {

struct LevelsSgdSettings {
  double rate = 0.01;        // α (Appendix C)
  std::size_t batch = 1024;  // values per batch (Appendix C)
};

// Algorithm 2 on the values that `statistics` summarises (every rank's,
// added in rank order, so every rank runs the same steps on the same
// numbers): as many draws as the statistics hold values, one pass over
// them, each draw a cell picked with probability proportional to its
// weight Σλ and standing for its weighted mean position Σλu/Σλ (cells are
// 1/4096 of [0, 1] wide for min-max positions). In each batch, every draw
// finds its closest level among the levels the batch started with (line
// 5), then moves it (line 6). The end levels 0 and 1 stay: they are each
// bucket's min and max. Returns levels that check_levels accepts; `start`
// when the statistics are empty.
std::vector<double> learn_levels_sgd(const LevelStatistics& statistics, std::span<const double> start,
                                     const CounterRng& rng, const LevelsSgdSettings& settings = {});

// The index of the level closest to u in increasing `levels` (Algorithm 2's
// find_closest; ties to the lower one).
std::size_t closest_level(std::span<const double> levels, double u);

// The weighted nearest-rounding error that Algorithm 2 descends on:
// Σ_cells Σλ·(closest level − Σλu/Σλ)² over the statistics' cells.
double nearest_rounding_error(const LevelStatistics& statistics, std::span<const double> levels);

}  // namespace qccl
