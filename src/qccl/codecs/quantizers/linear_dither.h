// Linear dithering L_s of Global-QSGD (§4.2, §8) as collective reductions:
// summed in transit while it cannot overflow, averaged per step otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "qccl/codecs/codec.h"
#include "qccl/common/counter_rng.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Levels per rank for linear dithering summed in transit (8-bit, at most 127
// ranks; beyond that, and at 4 bits, the codec averages inside each reduction
// step instead, with 2^(A-1) - 1 levels), so that the sum over `ranks` ranks
// fits a signed `bits`-bit integer (§4.2: 1 + log(s+1) + log n <= A):
// s = floor((2^(A-1) - 1) / n). Taking the floor is what makes overflow
// impossible: with ceil, 4 ranks at 8 bits would get 32 levels and a sum of
// 128, which wraps. Throws InvalidArgument when no level is left (n > 127 at
// 8 bits).
int linear_levels_per_rank(int bits, int ranks);

// int8 levels summed in transit; decodes to the mean.
std::unique_ptr<Reduction> make_linear_sum_reduction(std::string name, double norm, int levels,
                                                     int ranks, CounterRng quantize);
// `bits`-bit levels (8 or 4) averaged inside every step; decodes to the mean.
std::unique_ptr<Reduction> make_linear_average_reduction(std::string name, double norm, int bits,
                                                         int ranks, CounterRng quantize,
                                                         const CodecSettings& settings,
                                                         std::uint64_t step);

}  // namespace qccl
