// TernGrad's ternary values as packed 2-bit codes, for aggregation by
// gathering (Wen et al. 2017, TernGrad: 2 bits per element).
#pragma once

#include <memory>
#include <string>

#include "qccl/common/counter_rng.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Each element stochastically rounded to a level in {-1, 0, +1} on the
// shared scale `norm` (exactly the linear dithering of linear_dither.h with
// one level, the same random numbers, so the same levels), four 2-bit codes
// per byte. decode() writes level · `unit` (1: the integer levels, which a
// codec sums exactly and scales once; `norm`: the values of one shard);
// decode_contribution() writes level · norm. reduce() is not defined: the
// codes of different ranks are gathered and summed after decoding.
std::unique_ptr<Reduction> make_ternary_codes_reduction(std::string name, double norm,
                                                        float unit, CounterRng quantize);

}  // namespace qccl
