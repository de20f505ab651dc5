// Top-k sparsification (Aji and Heafield 2017, "Sparse communication for
// distributed gradient descent"), one of MergeComp's sparsifiers (§2.1,
// §3.1 Table 1, §5): each rank keeps the k largest |x| of every tensor, sends them as
// (index, value) pairs by allgather, and every rank sums the ranks' pairs.
// With error feedback by default (Stich, Cordonnier and Jaggi 2018,
// "Sparsified SGD with memory"), as MergeComp runs it.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "topk:ratio=0.01,ef=on": ratio in (0, 1] is the fraction kept per tensor
// (k = max(1, ⌈ratio·d⌉)); ef=on|off wraps it in error feedback.
std::unique_ptr<Codec> make_topk_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
