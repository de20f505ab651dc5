// signSGD's majority vote (Bernstein et al. 2018b, Algorithm 1) counted in
// transit: each rank's sign as a +1/-1 counter, counters added exactly hop by
// hop, and the final count — the sum over ranks of sign(x_i) — decoded as a
// float (the codec takes its sign). Counters are int8 up to 127 ranks, int32
// beyond. A partial count can never exceed the rank count; a larger one is
// rejected as corrupt.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "qccl/collectives/reduction.h"

namespace qccl {

// Bytes of one vote counter for `ranks` ranks: 1 up to 127, else 4.
std::size_t vote_counter_bytes(int ranks);

std::unique_ptr<Reduction> make_vote_count_reduction(std::string name, int ranks);

}  // namespace qccl
