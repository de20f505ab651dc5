// Global-QSGD (global-qsgd.txt): quantization on a scale shared by all ranks
// (the global norm), so that quantized integers are summed in transit by ring
// and tree allreduce without ever being decoded between hops.
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/global_norm.h"

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

// Levels per rank for linear dithering summed in transit (8-bit, at most 127
// ranks; beyond that, and at 4 bits, the codec averages inside each reduction
// step instead, with 2^(A-1) - 1 levels), so that the sum over `ranks` ranks
// fits a signed `bits`-bit integer (§4.2: 1 + log(s+1) + log n <= A):
// s = floor((2^(A-1) - 1) / n). Taking the floor is what makes overflow
// impossible: with ceil, 4 ranks at 8 bits would get 32 levels and a sum of
// 128, which wraps. Throws InvalidArgument when no level is left (n > 127 at
// 8 bits).
int linear_levels_per_rank(int bits, int ranks);

std::unique_ptr<Codec> make_global_qsgd_codec(const CodecSpec& spec, CodecSettings settings);
std::unique_ptr<Codec> make_global_qsgd_codec(const GlobalQsgdConfig& config,
                                              CodecSettings settings);

}  // namespace qccl
