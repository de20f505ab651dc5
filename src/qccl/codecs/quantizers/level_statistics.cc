#include "qccl/codecs/quantizers/level_statistics.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

constexpr int kOctaves = 24;
constexpr int kCellsPerOctave = 64;

std::vector<double> grid_with(std::span<const double> levels, std::size_t even_cells) {
  check_levels(levels);
  std::vector<double> edges(levels.begin(), levels.end());
  if (even_cells > 0) {
    for (std::size_t c = 1; c < even_cells; ++c) {
      edges.push_back(static_cast<double>(c) / static_cast<double>(even_cells));
    }
  } else {
    for (int e = 1; e <= kOctaves; ++e) {
      for (int m = 0; m < kCellsPerOctave; ++m) {
        edges.push_back(std::ldexp(1.0 + static_cast<double>(m) / kCellsPerOctave, -e));
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

}  // namespace

LevelStatistics::LevelStatistics(std::span<const double> levels, std::size_t even_cells)
    : edges_(grid_with(levels, even_cells)), sums_((edges_.size() - 1) * kMoments, 0.0) {}

void LevelStatistics::add(std::span<const float> v, std::size_t bucket, NormOrder q) {
  const std::size_t size = bucket == 0 ? std::max<std::size_t>(v.size(), 1) : bucket;
  for (std::size_t first = 0; first < v.size(); first += size) {
    const auto part = v.subspan(first, std::min(size, v.size() - first));
    const double norm = lq_norm(part, q);
    for (float x : part) {
      add_coordinate(norm == 0 ? 0.0 : std::min(1.0, std::fabs(x) / norm), norm * norm);
    }
  }
}

void LevelStatistics::add_coordinate(double u, double weight) {
  const std::size_t cells = edges_.size() - 1;
  const auto above = std::upper_bound(edges_.begin(), edges_.end(), u);
  const std::size_t cell = std::min(static_cast<std::size_t>(above - edges_.begin()) - 1, cells - 1);
  double* m = &sums_[cell * kMoments];
  m[0] += weight;
  m[1] += weight * u;
  m[2] += weight * u * u;
  m[3] += 1.0;
  m[4] += u;
  prefix_.clear();
}

std::vector<double> LevelStatistics::occupied_cells() const {
  std::vector<double> out;
  for (std::size_t c = 0; c + 1 < edges_.size(); ++c) {
    if (moment(c, 3) == 0.0) continue;
    out.push_back(static_cast<double>(c));
    for (std::size_t k = 0; k < kMoments; ++k) out.push_back(moment(c, k));
  }
  return out;
}

void LevelStatistics::add_occupied_cells(std::span<const double> cells) {
  constexpr std::size_t kEntry = kMoments + 1;
  const std::size_t count = edges_.size() - 1;
  if (cells.size() % kEntry != 0) {
    throw InvalidArgument("level statistics: " + std::to_string(cells.size()) +
                          " values are no whole number of (cell, moments) entries");
  }
  for (std::size_t at = 0; at < cells.size(); at += kEntry) {
    const double index = cells[at];
    if (!(index >= 0 && index < static_cast<double>(count)) || index != std::floor(index)) {
      throw InvalidArgument("level statistics: cell " + std::to_string(index) + " of " +
                            std::to_string(count) + " (statistics on another grid?)");
    }
    double* m = &sums_[static_cast<std::size_t>(index) * kMoments];
    for (std::size_t k = 0; k < kMoments; ++k) m[k] += cells[at + 1 + k];
  }
  prefix_.clear();
}

void LevelStatistics::clear() {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  prefix_.clear();
}

double LevelStatistics::coordinates() const {
  double n = 0;
  for (std::size_t c = 0; c + 1 < edges_.size(); ++c) n += moment(c, 3);
  return n;
}

void LevelStatistics::prefix() const {
  if (!prefix_.empty()) return;
  const std::size_t cells = edges_.size() - 1;
  prefix_.assign((cells + 1) * 3, 0.0L);
  for (std::size_t c = 0; c < cells; ++c) {
    for (std::size_t k = 0; k < 3; ++k) prefix_[(c + 1) * 3 + k] = prefix_[c * 3 + k] + moment(c, k);
  }
}

std::size_t LevelStatistics::edge_of(double level) const {
  const auto it = std::lower_bound(edges_.begin(), edges_.end(), level);
  if (it == edges_.end() || *it != level) {
    throw InvalidArgument("level statistics: level " + std::to_string(level) +
                          " is not an edge of the statistics' grid");
  }
  return static_cast<std::size_t>(it - edges_.begin());
}

// Σ over the cells between edges a < b of Σλ(b' − u)(u − a') with a', b'
// the two edges' values: −Σλu² + (a'+b')Σλu − a'b'Σλ.
long double LevelStatistics::interval_cost(std::size_t a, std::size_t b) const {
  const long double lo = edges_[a], hi = edges_[b];
  const long double w0 = prefix_[b * 3] - prefix_[a * 3];
  const long double w1 = prefix_[b * 3 + 1] - prefix_[a * 3 + 1];
  const long double w2 = prefix_[b * 3 + 2] - prefix_[a * 3 + 2];
  return -w2 + (lo + hi) * w1 - lo * hi * w0;
}

double LevelStatistics::variance(std::span<const double> levels) const {
  check_levels(levels);
  prefix();
  long double total = 0;
  for (std::size_t j = 0; j + 1 < levels.size(); ++j) {
    total += interval_cost(edge_of(levels[j]), edge_of(levels[j + 1]));
  }
  return static_cast<double>(std::max(total, 0.0L));
}

// A coordinate u between ℓ_j and ℓ_{j+1} becomes ℓ_{j+1} with probability
// (u − ℓ_j)/(ℓ_{j+1} − ℓ_j): summed over a cell that is count·(mean u − ℓ_j)/Δ.
std::vector<double> LevelStatistics::symbol_probabilities(std::span<const double> levels) const {
  check_levels(levels);
  std::vector<double> p(levels.size(), 0.0);
  double total = 0;
  for (std::size_t j = 0; j + 1 < levels.size(); ++j) {
    const std::size_t a = edge_of(levels[j]), b = edge_of(levels[j + 1]);
    double count = 0, sum_u = 0;
    for (std::size_t c = a; c < b; ++c) {
      count += moment(c, 3);
      sum_u += moment(c, 4);
    }
    const double up = std::clamp((sum_u - levels[j] * count) / (levels[j + 1] - levels[j]), 0.0, count);
    p[j + 1] += up;
    p[j] += count - up;
    total += count;
  }
  for (double& x : p) x = total > 0 ? x / total : 1.0 / static_cast<double>(levels.size());
  return p;
}

std::vector<double> LevelStatistics::fit_levels(std::span<const double> start) const {
  check_levels(start);
  prefix();
  std::vector<std::size_t> at(start.size());
  for (std::size_t j = 0; j < start.size(); ++j) at[j] = edge_of(start[j]);
  constexpr int kMaxSweeps = 500;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool moved = false;
    for (std::size_t j = 1; j + 1 < at.size(); ++j) {
      const std::size_t lo = at[j - 1], hi = at[j + 1];
      long double best = interval_cost(lo, at[j]) + interval_cost(at[j], hi);
      for (std::size_t e = lo + 1; e < hi; ++e) {
        const long double cost = interval_cost(lo, e) + interval_cost(e, hi);
        // Move only for a decrease beyond rounding, so the descent ends.
        if (cost < best - 1e-15L * std::fabs(best)) {
          best = cost;
          at[j] = e;
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  std::vector<double> levels(at.size());
  for (std::size_t j = 0; j < at.size(); ++j) levels[j] = edges_[at[j]];
  return levels;
}

}  // namespace qccl
