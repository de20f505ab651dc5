// Natural compression C_nat (Horváth et al. 2019, "Natural compression for
// distributed deep learning"): every element rounded stochastically to one
// of the two nearest powers of two, sign kept; one byte per element.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// "natural" (no parameters).
std::unique_ptr<Codec> make_natural_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
