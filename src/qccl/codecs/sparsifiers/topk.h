// Top-k sparsification (Aji and Heafield 2017, "Sparse communication for
// distributed gradient descent"), one of MergeComp's sparsifiers (§2.1,
// §3.1 Table 1, §5): each rank keeps the k largest |x| of every merged
// group (or of every tensor, select=tensor), sends them as (index, value)
// pairs by allgather, and every rank sums the ranks' pairs.
// With error feedback by default (Stich, Cordonnier and Jaggi 2018,
// "Sparsified SGD with memory"), as MergeComp runs it.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "topk:ratio=0.01,select=group,ef=on": ratio in (0, 1] is the fraction kept
// (k = max(1, ⌈ratio·d⌉)); select=group picks the k largest of the whole
// vector — a merged group compressed as one tensor, MergeComp §4.1 — and
// select=tensor the k_t largest of each tensor of the codec's layout;
// ef=on|off wraps it in error feedback.
std::unique_ptr<Codec> make_topk_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
