// Exponential dithering E_s of Global-QSGD (§4.2-4.3) as a collective
// reduction: one-byte codes summed by Algorithm 2's C_nat hop by hop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "qccl/codecs/codec.h"
#include "qccl/common/counter_rng.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Codes pre-scaled by 2^-headroom, with exp_dither::levels(headroom) levels;
// decodes to the mean over `ranks` ranks.
std::unique_ptr<Reduction> make_exp_dither_reduction(std::string name, double norm, int headroom,
                                                     int ranks, CounterRng quantize,
                                                     const CodecSettings& settings,
                                                     std::uint64_t step);

}  // namespace qccl
