// Global-QSGD (Global-QSGD): quantization on a scale shared by all ranks
// (the global norm), so that quantized integers are summed in transit by ring
// and halving-doubling allreduce without ever being decoded between hops.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/quantizers/linear_dither.h"  // linear_levels_per_rank

namespace qccl {

enum class Dither {
  linear,       // L_s: uniform levels, integers summed in transit
  exponential,  // E_s: power-of-two levels, summed by Algorithm 2's C_nat
};

struct GlobalQsgdConfig {
  int bits = 8;                  // wire bits per element
  Dither dither = Dither::linear;
  NormKind norm = NormKind::inf;  // Definition 1's (q,p) with q = p
  // Algorithm 1, lines 6-8: allgather the non-zero codes instead of the
  // allreduce when they take fewer bytes (8-bit only).
  bool sparse = false;
};


std::unique_ptr<Codec> make_global_qsgd_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_global_qsgd_codec(const GlobalQsgdConfig& config,
                                              CodecSettings settings);

}  // namespace qccl
