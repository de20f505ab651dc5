// Synthetic binary classification data of any size, for experiments at
// dimensions no shipped data set has.
#pragma once

#include <cstdint>

#include "qccl/experiments/intsgd/dataset.h"

namespace qccl::convex {

// `rows` samples of `features` dense Gaussian features whose mean drifts with
// the row index (so contiguous shards differ, as the paper's split by
// original index does), labels sign(a·x_true + noise) for a fixed random
// x_true; rows scaled to unit norm. A pure function of its arguments.
Dataset make_synthetic(std::size_t rows, std::size_t features, std::uint64_t seed);

}  // namespace qccl::convex
