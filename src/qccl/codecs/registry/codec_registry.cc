#include "qccl/codecs/registry/codec_registry.h"

#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/sparsifiers/dgc.h"
#include "qccl/codecs/error_feedback.h"
#include "qccl/codecs/quantizers/float_codecs.h"
#include "qccl/codecs/quantizers/global_qsgd.h"
#include "qccl/codecs/quantizers/intsgd.h"
#include "qccl/codecs/quantizers/minmax.h"
#include "qccl/codecs/quantizers/natural.h"
#include "qccl/codecs/sign/one_bit_codecs.h"
#include "qccl/codecs/low_rank/powersgd.h"
#include "qccl/codecs/quantizers/qgenx.h"
#include "qccl/codecs/quantizers/qsgd.h"
#include "qccl/codecs/sparsifiers/randk.h"
#include "qccl/codecs/sign/sign_vote.h"
#include "qccl/codecs/quantizers/terngrad.h"
#include "qccl/codecs/sparsifiers/topk.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

using MakeCodec = std::unique_ptr<Codec> (*)(const SpecSyntax&, CodecSettings);
using WrapCodec = std::unique_ptr<Codec> (*)(const SpecSyntax&, std::unique_ptr<Codec> inner);

// A row of the registry: a codec (make) or a wrapper around one (wrap).
struct CatalogEntry {
  std::string_view name;
  std::string_view description;
  MakeCodec make = nullptr;
  WrapCodec wrap = nullptr;
};

// The registry is a constant table: adding a codec adds a row.
constexpr CatalogEntry kCatalog[] = {
    {"fp32", "no compression: fp32 ring/halving-doubling/native allreduce", make_fp32_codec},
    {"fp16", "fp16 on the wire, summed in fp16 hop by hop", make_fp16_codec},
    {"global-qsgd",
     "Global-QSGD (global-norm quantization, summed in transit); params bits=8|4, "
     "dither=linear|exp (exp: 8-bit), norm=inf|2, sparse=off|auto (8-bit)",
     make_global_qsgd_codec},
    {"qsgd",
     "QSGD baseline (per-rank bucket norms, allgather then decode); params bits=8|4, "
     "bucket=128..4096 (512), norm=2|inf",
     make_qsgd_codec},
    {"qgenx",
     "Q-GenX's quantizer (per-rank L_q norms per bucket, random rounding to levels, allgather "
     "then decode); params bits=2..8 (8), levels=uniform|exp|qada (QAda: refitted from the "
     "ranks' statistics), norm=inf|1|2|3|4|6|8, bucket=N (1024; 0: one norm per vector), "
     "coding=fixed|huffman|elias, refit=100 (steps between refits)",
     make_qgenx_codec},
    {"minmax",
     "QSDP's bucketed min-max quantization (each bucket on its own [min, max] with 2^bits "
     "levels; allgather then decode); params bits=2..8 (8), bucket=N (1024; 0: one range per "
     "vector), rounding=stochastic|shift|dither (shift: the random-shift lattice Q^w, one shared "
     "shift per vector per step; dither: that draw as a shared dither on the fixed grid), levels=uniform|learned (learned: fitted from the ranks' values at "
     "steps refit*2^j, refit=400)",
     make_minmax_codec},
    {"terngrad",
     "TernGrad (ternary s_t·sign(x)·Bernoulli(|x|/s_t), s_t the max |x| of each tensor over "
     "all ranks, unbiased unless clipped); params clip=off|2.5 (clip to 2.5 standard deviations "
     "per tensor: biased), wire=int8|2bit (int8 partial sums in transit, up to 127 ranks | 2-bit "
     "codes gathered)",
     make_terngrad_codec},
    {"natural",
     "natural compression C_nat (stochastic rounding to a power of two, sign and 7-bit exponent "
     "below the global max's power, unbiased; allgather then decode); no params",
     make_natural_codec},
    {"intsgd",
     "IntSGD (adaptive integer rounding summed exactly; needs the optimizer's step feedback, "
     "first step exact); params round=random|deterministic, wire=int8|int32|int64, "
     "beta=0.9, eps=1e-8",
     make_intsgd_codec},
    {"intsgd-heuristic",
     "Heuristic IntSGD baseline (SwitchML scale from the max exponent); params "
     "round=random|deterministic, wire=int8|int32|int64",
     make_heuristic_intsgd_codec},
    {"intdiana",
     "IntDIANA (integer rounding of gradient differences with per-rank shifts; needs step "
     "feedback); params round=random|deterministic, wire=int8|int32|int64, beta=0, eps=1e-8",
     make_intdiana_codec},
    {"topk",
     "Top-k sparsification (the max(1, ceil(ratio*d)) largest |x| of each tensor as (index, "
     "value) pairs, allgathered and summed in rank order); params ratio=0.01 in (0,1], "
     "ef=on|off (error feedback, default on)",
     make_topk_codec},
    {"randk",
     "Rand-k sparsification on positions drawn from the shared seed (values only, summed in "
     "transit); params ratio=0.01 in (0,1], scale=none|unbiased (times d/k), ef=on|off "
     "(default scale=none,ef=on as in Stich et al. 2018; scale=unbiased needs ef=off)",
     make_randk_codec},
    {"dgc",
     "Deep Gradient Compression (momentum correction and factor masking, sampled threshold, "
     "pairs allgathered); the codec applies the momentum: run the optimizer WITHOUT momentum; "
     "params ratio=0.01, momentum=0.9, clip=off|C (per tensor, C/sqrt(n)), warmup=0 steps, "
     "sample=0.01",
     make_dgc_codec},
    {"signsgd",
     "signSGD with majority vote: one sign bit per element, the result is the vote "
     "sign(sum of signs) in {-1,0,+1} (an update direction: learning rate ~1e-4..1e-3); "
     "gathered bits up to 16 ranks, vote counts summed in transit beyond (int8; int32 past 127)",
     make_signsgd_codec},
    {"signum",
     "SigNUM: signSGD with majority vote on each rank's momentum (kept per tensor; run the "
     "optimizer without momentum); params momentum=0.9",
     make_signum_codec},
    {"scaled-sign",
     "scaled sign (||p||_1/d)*sign(p) per tensor, without error feedback; allgather then decode",
     make_scaled_sign_codec},
    {"ef-signsgd",
     "EF-SignSGD: scaled sign per tensor with error feedback; allgather then decode",
     make_ef_signsgd_codec},
    {"onebit-quantizer",
     "1-bit SGD's quantizer without error feedback: per tensor, the mean of the non-negative / "
     "of the negative elements and one bit per element; allgather then decode",
     make_onebit_quantizer_codec},
    {"onebit",
     "1-bit SGD: two means per tensor and one bit per element, with error feedback; allgather "
     "then decode",
     make_onebit_codec},
    {"powersgd",
     "PowerSGD (rank-r approximation of each matrix by one power-iteration step, its two "
     "factors summed by fp32 allreduce; vectors and small matrices uncompressed); allreduce "
     "mean; params rank=1..64 (2), warm_start=on|off, ef=on|off, min_rate=2",
     make_powersgd_codec},
    {"ef",
     "error feedback around any codec, ef(SPEC): compresses input + residual, keeps the residual "
     "per tensor (EF-SGD); allreduce and reduce-scatter means",
     nullptr, make_error_feedback_codec},
};

std::string join_names() {
  std::string names;
  for (const auto& e : kCatalog) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

}  // namespace

std::unique_ptr<Codec> make_codec(std::string_view text, CodecSettings settings) {
  const SpecSyntax spec = parse_spec_syntax(text);
  for (const auto& entry : kCatalog) {
    if (entry.name != spec.name) continue;
    if (entry.wrap != nullptr) {
      if (spec.inner.empty()) {
        throw InvalidArgument("codec " + spec.name + " wraps another codec; write " + spec.name +
                              "(SPEC), e.g. " + spec.name + "(global-qsgd:bits=4)");
      }
      return entry.wrap(spec, make_codec(spec.inner, settings));
    }
    if (!spec.inner.empty()) {
      throw InvalidArgument("codec " + spec.name + " wraps no other codec: drop '(" + spec.inner +
                            ")'");
    }
    return entry.make(spec, settings);
  }
  throw InvalidArgument("unknown codec '" + spec.name + "'; valid codecs: " + join_names());
}

CodecSpec::CodecSpec() : text_("fp32") {}

// The one place a spec's text becomes canonical: the codec it builds says
// what it is (Codec::spec() names every parameter).
CodecSpec CodecSpec::parse(std::string_view text) { return CodecSpec(make_codec(text)->spec()); }

std::string CodecSpec::name() const { return parse_spec_syntax(text_).name; }

std::unique_ptr<Codec> make_codec(const CodecSpec& spec, CodecSettings settings) {
  return make_codec(spec.text(), settings);
}

std::vector<std::pair<std::string, std::string>> codec_catalog() {
  std::vector<std::pair<std::string, std::string>> list;
  for (const auto& e : kCatalog) list.emplace_back(e.name, e.description);
  return list;
}

}  // namespace qccl
