#include "qccl/experiments/qgenx/sgda_solver.h"

#include <cmath>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"

namespace qccl::vi {

QuantizedSgda::QuantizedSgda(Communicator& comm, const StochasticOracle& oracle, Codec& codec,
                             SgdaSettings settings)
    : comm_(comm), oracle_(oracle), settings_(std::move(settings)), d_(oracle.op().dimension()),
      exchange_(comm, codec, settings_.collective, settings_.encoded_bits, d_) {
  if (!(settings_.step > 0 && std::isfinite(settings_.step))) {
    throw InvalidArgument("quantized SGDA: the step γ must be positive and finite, not " +
                          std::to_string(settings_.step));
  }
  scale_ = settings_.step * (settings_.step_rule == StepRule::adaptive ? comm.size() : 1);
  gamma_ = scale_;
  for (auto* v : {&x_, &sum_, &v_, &mean_, &own_}) v->assign(d_, 0.0);
}

double QuantizedSgda::step_size() const {
  if (settings_.step_rule == StepRule::constant) return scale_;
  return scale_ / std::sqrt(1.0 + squares_);
}

// One QSGDA step (Beznosikov et al. 2022; Q-GenX Appendix H.1):
// X_{t+1} = X_t − γ_t·(1/K)Σ_k Q(g_k(X_t)), then γ_{t+1} from the rule.
StepReport QuantizedSgda::step() {
  const std::uint64_t t = t_ + 1;
  StepReport report;
  report.iteration = t;
  report.gamma = gamma_;
  const std::uint64_t bytes_before = comm_.data_bytes_sent();
  oracle_.sample(x_, comm_.rank(), t - 1, v_);
  report.oracle_calls = 1;
  ExchangeCounts counts;
  exchange_.mean(v_, mean_, own_, counts);
  for (std::size_t i = 0; i < d_; ++i) {
    sum_[i] += x_[i];
    x_[i] -= gamma_ * mean_[i];
  }
  if (settings_.step_rule == StepRule::adaptive) {
    double local = 0;
    for (double o : own_) local += o * o;
    report.squared_difference =
        exchange_.sum_over_ranks(local, "sgda step size", t, [&](const std::string& ranks) {
          return "quantized SGDA iteration " + std::to_string(t) +
                 ": the quantized dual vectors of rank(s) " + ranks +
                 " are not finite; the iterates diverged: lower the step";
        });
    squares_ += report.squared_difference;
  }
  gamma_ = step_size();
  t_ = t;
  report.next_gamma = gamma_;
  report.vector_exchanges = counts.vector_exchanges;
  report.encoded_bits = counts.encoded_bits;
  report.bound_bits = counts.bound_bits;
  report.data_bytes = comm_.data_bytes_sent() - bytes_before;
  return report;
}

std::vector<double> QuantizedSgda::average() const {
  if (t_ == 0) return x_;
  std::vector<double> a(d_);
  for (std::size_t i = 0; i < d_; ++i) a[i] = sum_[i] / static_cast<double>(t_);
  return a;
}

std::uint64_t QuantizedSgda::replica_checksum() const {
  std::uint64_t sum = checksum64(std::as_bytes(std::span<const double>(x_)), kChecksumSeed);
  sum = checksum64(std::as_bytes(std::span<const double>(sum_)), sum);
  const double scalars[] = {gamma_, squares_, static_cast<double>(t_)};
  return checksum64(std::as_bytes(std::span<const double>(scalars)), sum);
}

void QuantizedSgda::check_replicas() {
  exchange_.check_replicas(replica_checksum(), "sgda replica check", t_,
                           "quantized SGDA iteration " + std::to_string(t_));
}

}  // namespace qccl::vi
