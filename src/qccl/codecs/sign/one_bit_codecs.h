// 1-bit codecs with per-tensor levels, aggregated by allgather and decode
// (MergeComp §2, §5, Table 1), each one bit per element plus a header of
// levels per tensor and chunk (sign_levels_encoding.h):
//
// - scaled-sign: C(p) = (||p||_1 / d) * sign(p) per tensor, d its size
//   (Karimireddy et al. 2019, "Error feedback fixes SignSGD", Algorithm 1,
//   the compressor of EF-SignSGD), on its own: biased, no memory.
// - ef-signsgd: EF-SignSGD (Karimireddy et al. 2019, Algorithms 1 and 2):
//   scaled-sign with error feedback, p = g + e, e <- p - C(p) per tensor
//   (error_feedback.h). The EF baseline of Global-QSGD §2, IntSGD §1.
// - onebit-quantizer: the quantizer of 1-bit SGD (Seide et al. 2014): per
//   tensor, elements >= 0 reconstruct as the mean of the tensor's
//   non-negative elements, the others as the mean of its negative ones (the
//   paper takes the two means per column of a weight matrix; here, per
//   tensor).
// - onebit: 1-bit SGD with error feedback (Seide et al. 2014): the
//   quantization error of a step is added to the next step's gradient
//   before it is quantized.
//
// Every rank's levels are its own, so encodings are allgathered (or, for a
// reduce-scatter, sent to the block's owner) and decoded on the ranks that
// need them, added in rank order and divided by n. The levels are those of
// the whole tensor of the codec's layout (one tensor if it has none), from
// the step's whole input; an allgather takes each shard as one tensor.
// Operations: allreduce mean, reduce-scatter mean, and for the quantizers
// alone also allgather (error feedback corrects means only).
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

std::unique_ptr<Codec> make_scaled_sign_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_ef_signsgd_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_onebit_quantizer_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_onebit_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
