// Which elements a sparsifier keeps: the counts, the k largest magnitudes
// (Top-k, DGC's fallback) and k uniformly random positions (Rand-k). Every
// function appends positions in increasing order, so a selection can be
// cut into chunks by binary search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/tensor_layout.h"
#include "qccl/common/counter_rng.h"

namespace qccl {

// Elements kept of a tensor of `elements` at density `ratio` in (0, 1]:
// max(1, ⌈ratio·elements⌉), 0 for an empty tensor, never more than
// `elements`. The product is rounded down by a relative 1e-12 first, so a
// ratio that is not exact in binary (0.07·100 = 7.000000000000001) does not
// keep one element more than written.
std::size_t sparse_count(double ratio, std::size_t elements);

// Reads a sparsifier's `ratio` parameter, the fraction of elements kept, in
// (0, 1]; the default is MergeComp's 99% sparsity (§5, "the gradient
// sparsity of sparsification algorithms is 99%").
double read_sparse_ratio(CodecParams& params, std::string_view codec);

// The tensors a sparsifier selects in, for data of `length` elements: the
// layout's when it covers exactly `length` (or is unnamed), otherwise one
// tensor over the whole data (an allgather's shard is not the layout's
// vector).
std::vector<TensorSlice> selection_tensors(const TensorLayout& layout, std::size_t length);

// Where a sparsifier picks its k largest: in the whole vector it is given
// (a merged group compressed as one tensor, MergeComp §4.1 Algorithm 1:
// "tensors that belong to the same group are merged and compressed together
// in one compression operation") or in each tensor of its layout (how
// frameworks apply codecs layer by layer, MergeComp §2.2).
enum class SelectionScope { group, tensor };

// Reads a sparsifier's `select` parameter: group (the default, MergeComp's)
// or tensor.
SelectionScope read_selection_scope(CodecParams& params);
std::string_view selection_scope_name(SelectionScope scope);

// The slices a sparsifier selects in, for data of `length` elements under
// `scope`: one slice over all of it for group, selection_tensors for tensor.
std::vector<TensorSlice> selection_slices(const TensorLayout& layout, std::size_t length,
                                          SelectionScope scope);

// Appends offset + j for the k elements x[j] of largest |x[j]|, ties broken
// by lower j, in increasing order (k >= x.size(): all of them). Exact and
// O(d): std::nth_element finds the k-th largest magnitude τ, then one pass
// in index order takes every |x| > τ and the first k − #{|x| > τ} with
// |x| = τ. Magnitudes are compared as the bits of |x|, which order finite
// floats (−0 and +0 alike); `scratch` is reused between calls.
void select_largest(std::span<const float> x, std::size_t k, std::size_t offset,
                    std::vector<std::size_t>& selected, std::vector<std::uint32_t>& scratch);

// A uniform integer in [0, bound) (bound >= 1) from `rng`, exactly: 64
// random bits r mod bound, rejecting the r below 2^64 mod bound (the partial
// period that would favour small results). Draw `draw` reads counters
// draw·2^32 + attempt, attempt = 0, 1, ... until one is accepted (a
// rejection has probability below bound/2^64).
std::uint64_t uniform_below(const CounterRng& rng, std::uint64_t draw, std::uint64_t bound);

// Appends offset + j for k distinct positions j of [0, d), drawn uniformly
// among all k-subsets, in increasing order: Floyd's algorithm (Bentley and
// Floyd 1987, "A sample of brilliance"), whose draw i picks uniformly in
// [0, d − k + i] and takes d − k + i instead if the pick is already taken.
// Membership is a bitmap of d bits (`bitmap`, reused), read back in order:
// O(d/64 + k) time, deterministic in `rng`.
void select_uniform(const CounterRng& rng, std::size_t d, std::size_t k, std::size_t offset,
                    std::vector<std::size_t>& selected, std::vector<std::uint64_t>& bitmap);

}  // namespace qccl
