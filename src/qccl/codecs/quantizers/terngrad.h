// TernGrad (Wen et al. 2017): every element becomes s · sign(x) · b with
// b ~ Bernoulli(|x|/s) on a scale s shared by all ranks, so the ternary
// values of all ranks are summed as integers.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "terngrad:clip=off|2.5,wire=int8|2bit".
std::unique_ptr<Codec> make_terngrad_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
