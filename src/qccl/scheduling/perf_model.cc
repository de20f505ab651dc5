#include "qccl/scheduling/perf_model.h"

#include <algorithm>
#include <cmath>

#include "qccl/common/errors.h"

namespace qccl {

ModelTerms model_terms(Algorithm algorithm, int ranks, double bytes, double ratio) {
  const double n = ranks;
  return model_terms_measured(algorithm, ranks, bytes, 2 * (n - 1) / n * bytes / ratio);
}

ModelTerms model_terms_measured(Algorithm algorithm, int ranks, double bytes, double sent_bytes) {
  const double n = ranks;
  ModelTerms terms;
  terms.steps = algorithm == Algorithm::halving_doubling ? 2 * std::ceil(std::log2(n)) : 2 * (n - 1);
  terms.wire_bytes = sent_bytes;
  terms.reduce_bytes = (n - 1) / n * bytes;
  terms.codec_bytes = bytes;
  return terms;
}

double predict_seconds(const ModelTerms& t, const ModelParams& p) {
  return t.steps * p.alpha + t.wire_bytes / p.beta + (p.gamma > 0 ? t.reduce_bytes / p.gamma : 0) +
         t.codec_bytes * p.delta;
}

ModelParams fit_alpha_beta(const std::vector<ModelSample>& samples, double gamma, double delta) {
  if (samples.size() < 2) throw InvalidArgument("fitting the model needs at least two sizes");
  // y = t − reduce/γ − codec·δ = steps·α + wire·b, b = 1/β; weights 1/t².
  double ss = 0, sw = 0, ww = 0, sy = 0, wy = 0;
  for (const auto& s : samples) {
    const double weight = 1 / (s.seconds * s.seconds);
    const double y = s.seconds - (gamma > 0 ? s.terms.reduce_bytes / gamma : 0) -
                     s.terms.codec_bytes * delta;
    ss += weight * s.terms.steps * s.terms.steps;
    sw += weight * s.terms.steps * s.terms.wire_bytes;
    ww += weight * s.terms.wire_bytes * s.terms.wire_bytes;
    sy += weight * s.terms.steps * y;
    wy += weight * s.terms.wire_bytes * y;
  }
  const double det = ss * ww - sw * sw;
  double alpha = det != 0 ? (sy * ww - sw * wy) / det : -1;
  double b = det != 0 ? (ss * wy - sw * sy) / det : 0;
  if (alpha < 0) {  // latency cannot be negative: fit the bandwidth alone
    alpha = 0;
    b = wy / ww;
  }
  if (!(b > 0)) {
    throw InvalidArgument("the measurements imply no positive bandwidth: times do not grow with "
                          "the bytes on the wire (sizes within a shaped link's burst, or too "
                          "noisy); measure larger sizes");
  }
  return {alpha, 1 / b, gamma, delta};
}

FitError fit_error(const std::vector<ModelSample>& samples, const ModelParams& params) {
  std::vector<double> errors;
  for (const auto& s : samples) {
    errors.push_back(std::abs(predict_seconds(s.terms, params) - s.seconds) / s.seconds);
  }
  FitError e;
  if (errors.empty()) return e;
  std::sort(errors.begin(), errors.end());
  const std::size_t m = errors.size();
  e.median = m % 2 ? errors[m / 2] : 0.5 * (errors[m / 2 - 1] + errors[m / 2]);
  e.max = errors.back();
  return e;
}

SpeedupCondition speedup_condition(double ratio, double gamma_fp32, double gamma_codec,
                                   double beta) {
  SpeedupCondition c;
  // γ̂ in compressed bytes/s is γ_codec/ρ (γ_codec counts fp32 input bytes).
  c.omega = gamma_fp32 / (gamma_codec / ratio);
  if (c.omega > ratio) c.max_beta = 2 * (ratio - 1) * gamma_fp32 / (c.omega - ratio);
  c.holds = !c.max_beta || beta < *c.max_beta;
  return c;
}

}  // namespace qccl
