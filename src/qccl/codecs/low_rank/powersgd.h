// PowerSGD (Vogels, Karimireddy and Jaggi 2019, "PowerSGD: practical
// low-rank gradient compression for distributed optimization"): each
// gradient matrix is replaced by a rank-r approximation found by one step of
// power iteration, whose two thin factors are summed by allreduce — the
// low-rank, allreduce-compatible baseline of MergeComp §2 and
// Global-QSGD §2 (Table 1).
//
// Spec: powersgd:rank=2,warm_start=on,ef=on,min_rate=2
// - rank (1..64): r, the approximation's rank; a tensor uses min(n, m, r).
// - warm_start (on|off): on keeps each tensor's Q from the last step
//   (paper §3: one power-iteration step per training step, which converges
//   to the best rank-r approximation of a slowly changing gradient); off
//   draws a fresh Q every step.
// - ef (on|off): error feedback (the paper's Algorithm 2): every rank
//   compresses M = g + e and keeps e ← M − (its own decompressed part).
// - min_rate (0..1e6): a tensor is compressed only when that shrinks it by
//   more than this factor, n·m > min_rate·r·(n + m) (PyTorch's powerSGD_hook's
//   min_compression_rate; 0 compresses every matrix).
//
// Which tensors: those of the codec's layout (set_layout). A tensor of two or
// more dimensions is viewed as an n × m matrix, n = shape[0], m = the product
// of the rest; 1-D tensors, scalars and matrices that would not shrink enough
// are summed uncompressed (fp32). With no layout the vector is one 1-D
// tensor, so the codec is then exactly the fp32 mean.
//
// One step (allreduce mean only — the factors are meaningful only summed
// over every rank: no reduce-scatter, no allgather) runs two fp32 sum
// allreduces inside one checked call: [every P ‖ every uncompressed tensor],
// then [every Q]. Every rank ends with the same bits: the fp32 sums are the
// same on every rank, and all that follows is computed from them alone.
//
// (On algorithm native the sums are MPI_Allreduce's, which MPI does not
// promise to return bit-identical on every rank; Open MPI does, as the fp32
// codec relies on too.)
//
// Wire bytes (what one rank contributes): 4·(Σ_compressed r·(n + m) +
// Σ_uncompressed elements) when the layout covers the vector, else 4 per
// element. Biased; no per-element bound against the input when any tensor
// is compressed (with no compressed tensor it is the fp32 mean, with fp32's
// bound).
//
// State (per tensor, by name, in the codec's TensorStateStore, so it is
// checkpointed and follows the tensor across bucket layouts): Q (warm start)
// and the residual e (error feedback).
#pragma once

#include <memory>
#include <string_view>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

struct PowerSgdConfig {
  std::size_t rank = 2;
  bool warm_start = true;
  bool error_feedback = true;
  double min_rate = 2.0;
};

// The per-tensor state's fields in the TensorStateStore: Q by column (r·m
// floats) and the residual (the tensor's elements).
inline constexpr std::string_view kPowerSgdQField = "powersgd.q";
inline constexpr std::string_view kPowerSgdResidualField = "powersgd.residual";

// How the codec treats one tensor.
struct PowerSgdShape {
  bool compressed = false;
  std::size_t rows = 0, cols = 0;  // n and m
  std::size_t rank = 0;            // min(n, m, r) when compressed
};
PowerSgdShape powersgd_shape(const TensorSlice& tensor, const PowerSgdConfig& config);

std::unique_ptr<Codec> make_powersgd_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
