// TernGrad's ternary levels (Wen et al. 2017, §3) as collective reductions,
// each tensor on its own shared scale: int8 partial sums in transit, or the
// paper's 2-bit codes gathered.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// The shared scales of TernGrad's layer-wise ternarizing (§3): tensor t
// holds elements [bounds[t], bounds[t + 1]) of the element space the
// chunks' `first` counts in (the vector for the means, the output for an
// allgather) and is ternarized on scales[t] = s_t, the largest |x| of that
// tensor over all ranks (0: the tensor is zero on every rank). One tensor
// covering everything is the whole vector on one scale.
struct TernaryScales {
  std::vector<std::size_t> bounds{0, std::numeric_limits<std::size_t>::max()};
  std::vector<double> scales{0.0};

  static TernaryScales uniform(double scale) {
    return {{0, std::numeric_limits<std::size_t>::max()}, {scale}};
  }
};

// The most ranks whose ±1 levels an int8 partial sum holds.
constexpr int kTernaryInt8MaxRanks = 127;

enum class TernaryWire {
  int8_sums,  // one int8 per element, partial sums of levels added in transit
  codes,      // four 2-bit codes per byte, gathered and summed after decoding
};

struct TernarySetup {
  std::string name;  // for messages
  TernaryWire wire = TernaryWire::int8_sums;
  // How many ranks' levels one decoded value adds: n for the means, 1 for
  // an allgather's shards.
  int summed = 1;
  // codes only: decode() writes the integer levels (which the codec adds
  // over ranks exactly and scales once with scale_level_sums) instead of
  // the values q · fl(s_t).
  bool integer_levels = false;
  TernaryScales scales;
};

// Each element x of tensor t stochastically rounded to a level q ∈ {−1, 0, +1}
// with x's sign, |q| = 1 with probability |x|/s_t: the linear dithering of
// linear_dither.h with one level (encode_levels, the same random numbers,
// keyed by element), on each tensor's scale. A chunk may span tensors: it
// is encoded and decoded segment by segment.
// - int8_sums: the encoding is a Reduction whose reduce() adds levels,
//   |partial sum| <= summed; decode() writes (Σq) · fl(s_t / summed), the
//   mean.
// - codes: the encoding is gathered, not reduced; decode() writes q · fl(s_t),
//   or q itself with integer_levels.
// decode_contribution() writes one rank's q · fl(s_t). The scales may be
// replaced (set_scales) until the first chunk is encoded: a codec learns
// them in an exchange inside the step's call, after building the encoding.
class TernaryLevels;
class TernaryStep {
 public:
  TernaryStep(TernarySetup setup, CounterRng quantize);
  // An encoding of this step's levels (several share them).
  std::unique_ptr<Encoding> encoding() const;
  void set_scales(TernaryScales scales);
  const TernaryScales& scales() const;

 private:
  std::shared_ptr<TernaryLevels> levels_;
};

// The 2-bit wire's means: out[i], the exact sum over `summed` ranks of the
// levels of element first + i, becomes out[i] · fl(s_t / summed) for its
// tensor t — the int8 decode's arithmetic, so both wires give the same bits.
void scale_level_sums(const TernaryScales& scales, std::size_t first, std::span<float> out,
                      int summed);

}  // namespace qccl
