// The collective reduction of the IntSGD family (IntSGD Algorithm 1,
// lines 8-12): each rank's scaled, rounded and clipped integers are summed
// exactly, hop by hop, in their wire type, and decoded to Σ/(n·α) at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/codecs/quantizers/int_rounding.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

struct IntegerSumSetup {
  std::string name;  // compared across ranks: include what must agree (spec, scales)
  IntWire wire = IntWire::int8;
  IntRounding rounding = IntRounding::random;
  int ranks = 1;
  std::int64_t clip = 1;  // per-rank bound, per_rank_clip(wire, ranks)
  // Block l covers [block_starts[l], block_starts[l+1]) and has scale alphas[l].
  std::vector<std::size_t> block_starts;
  std::vector<double> alphas;
  CounterRng rng{0, 0, 0, 0, RngStream::quantize};
  // Optional: encode reads the values to round from here (fp64, same
  // indexing as the vector) instead of its fp32 input.
  std::span<const double> source;
  // Optional: encode also stores this rank's integers here, in the wire
  // type (element i at byte i·sizeof(wire integer)).
  std::span<std::byte> local_integers;
  // Optional: decode also stores the aggregated integers here, likewise.
  std::span<std::byte> summed_integers;
};

class IntegerSumReduction : public Reduction {
 public:
  // Coordinates this rank clipped while encoding.
  virtual std::uint64_t clipped() const = 0;
  // Largest |integer| this rank encoded.
  virtual std::uint64_t largest_sent() const = 0;
  // Largest |aggregated integer| seen while decoding.
  virtual std::uint64_t largest_sum() const = 0;
};

std::unique_ptr<IntegerSumReduction> make_integer_sum_reduction(IntegerSumSetup setup);

}  // namespace qccl
