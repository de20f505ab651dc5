// An encoding of a slice of a longer vector: forwards to the encoding of the
// whole vector with every element index moved by the slice's first element.
// The hierarchical allreduce reduces slices across hosts with collectives
// that index from the slice's start; through this, a codec's per-element
// randomness stays keyed by the element's place in the whole vector, so the
// slices of one rank draw independent numbers.
#pragma once

#include <cstddef>
#include <memory>

#include "qccl/collectives/encoding.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// The offset view of `whole` for the slice starting at element `first`: a
// Reduction when `whole` is one. `whole` must outlive it.
std::unique_ptr<Encoding> offset_encoding(Encoding& whole, std::size_t first);

}  // namespace qccl
