// Deep Gradient Compression (Lin, Han, Mao, Wang and Dally 2018, "Deep
// Gradient Compression: reducing the communication bandwidth for distributed
// training"), as MergeComp evaluates it (§2.1, §5; §3.1 Table 1:
// sparse values aggregated by allgather). The codec applies momentum itself ("momentum
// correction"): the optimizer must run plain SGD, without momentum.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "dgc:ratio=0.01,select=group,momentum=0.9,clip=off,warmup=0,sample=0.01":
// select=group selects in the whole vector (a merged group as one tensor,
// MergeComp §4.1), select=tensor in each tensor of the codec's layout.
std::unique_ptr<Codec> make_dgc_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
