// The uncompressed baselines as codecs: fp32 (the collectives' fp32 sum,
// including MPI's native allreduce) and fp16 (half the bytes, summed in fp16).
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

std::unique_ptr<Codec> make_fp32_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_fp16_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
