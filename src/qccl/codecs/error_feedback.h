// Error feedback around any codec, `ef(SPEC)` (EF-SGD: Stich, Cordonnier and
// Jaggi 2018, "Sparsified SGD with memory"; Karimireddy et al. 2019, "Error
// feedback fixes SignSGD", Algorithm 2 — the EF baselines of
// Global-QSGD §2 and IntSGD §1): each step compresses
//   p = x + e        (this rank's input plus the residual it kept)
// with the inner codec, which reports what this rank contributed, Q(p)
// (Codec's `own` output, from Encoding::decode_contribution), and keeps
//   e ← p − Q(p)
// per tensor, by name, in the codec's TensorStateStore: so the residual
// survives a change of bucket layout and is saved with the checkpoint. Over
// T steps the compressed contributions add up to Σ x_t − e_T: nothing a
// biased compressor drops is lost, it is only delayed.
//
// It wraps allreduce mean and reduce-scatter mean (compressed gradients
// that are summed), not allgather: gathered values are used as they are.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

std::unique_ptr<Codec> make_error_feedback_codec(const SpecSyntax& spec,
                                                 std::unique_ptr<Codec> inner);

// Error feedback as part of a named scheme (Top-k's default, EF-SignSGD,
// OneBit): the wrapper reports `spec` as its spec(), a text make_codec()
// builds the same codec from.
std::unique_ptr<Codec> make_error_feedback_codec(std::unique_ptr<Codec> inner, std::string spec);

}  // namespace qccl
