// Plain QSGD (Alistarh et al. 2017), the baseline Global-QSGD is compared
// with (Global-QSGD §2, §9): each rank scales every bucket by its own
// local norm, so encodings from different ranks cannot be summed in transit;
// they are allgathered, and every rank decodes all of them and averages.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

std::unique_ptr<Codec> make_qsgd_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
