// Rand-k sparsification (Stich, Cordonnier and Jaggi 2018, "Sparsified SGD
// with memory"; MergeComp §2.1, §3.1 Table 1, §5) with the kept positions drawn
// from a seed every rank shares (Global-QSGD §2, footnote 1:
// "synchronized random seed" makes random sparsification Allreduce
// compatible): every rank keeps the same k positions of each slice, so only
// the values travel and they are summed in transit, hop by hop.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "randk:ratio=0.01,select=group,scale=none,ef=on": ratio in (0, 1] is the
// fraction kept; select=group draws k = max(1, ⌈ratio·d⌉) positions in the
// whole vector (a merged group as one tensor, MergeComp §4.1), select=tensor
// k_t in each tensor of the codec's layout; scale=none sends the values as
// they are, scale=unbiased multiplies them by d_t/k_t; ef=on|off wraps the
// codec in error feedback (default on, except with scale=unbiased, which
// refuses it).
std::unique_ptr<Codec> make_randk_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
