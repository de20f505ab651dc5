// The allreduce performance model of Global-QSGD §7, for qccl's algorithms:
//
//   t = steps·α + wire/β + reduce/γ + codec·δ
//
// α: latency per step (s); β: link bandwidth (bytes/s); γ: reduction speed
// (fp32-equivalent bytes/s); δ: encode + decode time per fp32 byte. For a
// vector of S fp32 bytes on n ranks with compression ratio ρ = S/Ŝ:
//   ring: steps 2(n−1), wire 2(n−1)/n·Ŝ, reduce (n−1)/n·S, codec S;
//   halving-doubling (recursive halving, then doubling, §7): steps 2⌈log2 n⌉, the same
//   wire and reduce terms (each halving step sends and reduces half of what
//   the previous one did).
// native (MPI's own algorithm, which qccl cannot see) is modelled like the
// ring, with a bandwidth-optimal algorithm's wire bytes.
// The paper's binary-tree form 2log(n)α + 2log(n)S/β + log(n)S/γ is the
// tree that sends the whole vector per level; qccl's halving-doubling does not.
//
// It lives below the tools because the compression scheduler (MergeComp)
// predicts step times with it.
#pragma once

#include <optional>
#include <vector>

#include "qccl/collectives/options.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct ModelTerms {
  double steps = 0, wire_bytes = 0, reduce_bytes = 0, codec_bytes = 0;
};

struct ModelParams {
  double alpha = 0;   // s per step
  double beta = 0;    // bytes/s
  double gamma = 0;   // bytes/s; 0: no reduction cost (MPI's own, or unknown)
  double delta = 0;   // s per fp32 byte
};

ModelTerms model_terms(Algorithm algorithm, int ranks, double bytes, double ratio);
// As above with the wire bytes a rank was measured to send.
ModelTerms model_terms_measured(Algorithm algorithm, int ranks, double bytes, double sent_bytes);
double predict_seconds(const ModelTerms& terms, const ModelParams& params);

// One measurement for a fit: its terms and time.
struct ModelSample {
  ModelTerms terms;
  double seconds = 0;
};

// Fits α and β by least squares on relative error (weights 1/t², so small
// and large sizes count alike), γ and δ given. α is kept >= 0 (refit with
// α = 0 if the unconstrained fit is negative). Throws InvalidArgument with
// fewer than two samples or when the data imply no positive bandwidth.
ModelParams fit_alpha_beta(const std::vector<ModelSample>& samples, double gamma, double delta);

struct FitError {
  double median = 0, max = 0;  // |predicted − measured| / measured
};
FitError fit_error(const std::vector<ModelSample>& samples, const ModelParams& params);

// Eq. (10) generalised to any ρ: compression shortens the allreduce iff
//   2(ρ−1)/β > (ω − ρ)/γ,  ω = ρ·γ/γ̂ (γ̂ in compressed bytes/s, as the paper),
// i.e. always when ω <= ρ, else iff β < 2(ρ−1)γ/(ω − ρ). With ρ = 4 this is
// the paper's β > 6γ/(ω−4) (ω < 4) / β < 6γ/(ω−4) (ω > 4).
struct SpeedupCondition {
  double omega = 0;                  // paper's ω
  std::optional<double> max_beta;    // bytes/s; unset: any bandwidth
  bool holds = false;                // for the given β
};
SpeedupCondition speedup_condition(double ratio, double gamma_fp32, double gamma_codec_fp32_bytes,
                                   double beta);

}  // namespace qccl
QCCL_API_END
