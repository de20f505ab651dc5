#include "qccl/experiments/qgenx/qgenx_solver.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/byte_io.h"

namespace qccl::vi {
namespace {

constexpr std::uint32_t kStateMagic = 0x51475853;  // "QGXS"
constexpr std::uint32_t kStateVersion = 1;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

}  // namespace

std::string to_string(Method method) {
  switch (method) {
    case Method::dual_averaging: return "da";
    case Method::dual_extrapolation: return "de";
    case Method::optimistic: return "optda";
  }
  return "?";
}

Method parse_method(std::string_view text) {
  for (Method m : {Method::dual_averaging, Method::dual_extrapolation, Method::optimistic}) {
    if (text == to_string(m)) return m;
  }
  throw InvalidArgument("unknown Q-GenX method '" + std::string(text) +
                        "'; valid: da (dual averaging), de (dual extrapolation), optda "
                        "(optimistic dual averaging)");
}

QGenXSolver::QGenXSolver(Communicator& comm, const StochasticOracle& oracle, Codec& codec,
                         SolverSettings settings)
    : comm_(comm), oracle_(oracle), codec_(codec), settings_(std::move(settings)),
      d_(oracle.op().dimension()),
      exchange_(comm, codec, settings_.collective, settings_.encoded_bits, d_) {
  if (!(settings_.step_base > 0 && std::isfinite(settings_.step_base))) {
    throw InvalidArgument("Q-GenX: the step base must be positive and finite");
  }
  if (!settings_.anchor.empty() && settings_.anchor.size() != d_) {
    throw InvalidArgument("Q-GenX: the anchor X_0 has " + std::to_string(settings_.anchor.size()) +
                          " elements, the problem " + std::to_string(d_));
  }
  scale_ = settings_.step_base * (settings_.scale_by_ranks ? comm.size() : 1);
  gamma_ = scale_;
  anchor_ = settings_.anchor.empty() ? std::vector<double>(d_, 0.0) : settings_.anchor;
  x_ = anchor_;
  half_ = anchor_;
  y_.assign(d_, 0.0);
  half_sum_.assign(d_, 0.0);
  previous_mean_.assign(d_, 0.0);
  previous_own_.assign(d_, 0.0);
  for (auto* v : {&v_, &mean_, &own_, &mean_half_, &own_half_}) v->assign(d_, 0.0);
}

void QGenXSolver::draw(std::span<const double> at, std::uint64_t call, std::span<double> out,
                       StepReport& report) {
  oracle_.sample(at, comm_.rank(), call, out);
  ++report.oracle_calls;
}

// (1/K)Σ_k Q(v_k) of this rank's `v` into `mean`, this rank's Q(v) into `own`.
void QGenXSolver::exchange(std::span<const double> v, std::span<double> mean,
                           std::span<double> own, StepReport& report) {
  ExchangeCounts counts{report.vector_exchanges, report.encoded_bits, report.bound_bits};
  exchange_.mean(v, mean, own, counts);
  report.vector_exchanges = counts.vector_exchanges;
  report.encoded_bits = counts.encoded_bits;
  report.bound_bits = counts.bound_bits;
}

double QGenXSolver::step_size() const {
  if (settings_.step_rule == StepRule::constant) return scale_;
  return scale_ / std::sqrt(1.0 + squares_);
}

// One iteration of Q-GenX §3.1, Algorithm 1 / Eq. (Q-GenX), with V̂_{k,t}
// chosen as in Examples 3.1–3.3 (Appendix C), and γ_{t+1} from
// Theorems 3–4's rule (see the header). The oracle's call index is 2(t−1)
// for the draw at X_t and 2(t−1)+1 for the draw at X_{t+½}.
StepReport QGenXSolver::step() {
  const std::uint64_t t = t_ + 1;
  StepReport report;
  report.iteration = t;
  report.gamma = gamma_;
  const std::uint64_t bytes_before = comm_.data_bytes_sent();
  // X_{t+½} = X_t − γ_t·(1/K)Σ_k V̂_{k,t}; own_ holds this rank's V̂_{k,t}.
  switch (settings_.method) {
    case Method::dual_averaging:
      std::fill(own_.begin(), own_.end(), 0.0);
      half_ = x_;
      break;
    case Method::dual_extrapolation:
      draw(x_, 2 * (t - 1), v_, report);
      exchange(v_, mean_, own_, report);
      for (std::size_t i = 0; i < d_; ++i) half_[i] = x_[i] - gamma_ * mean_[i];
      break;
    case Method::optimistic:
      own_ = previous_own_;
      for (std::size_t i = 0; i < d_; ++i) half_[i] = x_[i] - gamma_ * previous_mean_[i];
      break;
  }
  // Y_{t+1} = Y_t − (1/K)Σ_k V̂_{k,t+½}.
  draw(half_, 2 * (t - 1) + 1, v_, report);
  exchange(v_, mean_half_, own_half_, report);
  for (std::size_t i = 0; i < d_; ++i) y_[i] -= mean_half_[i];
  if (settings_.step_rule == StepRule::adaptive) {
    double local = 0;
    for (std::size_t i = 0; i < d_; ++i) {
      const double diff = own_[i] - own_half_[i];
      local += diff * diff;
    }
    // Σ_k ‖V̂_{k,t} − V̂_{k,t+½}‖² (Theorems 3–4), the same bits on every rank.
    report.squared_difference = exchange_.sum_over_ranks(
        local, "qgenx step size", t_, [&](const std::string& ranks) {
          return "Q-GenX iteration " + std::to_string(t_) + ": the quantized dual vectors of rank(s) " +
                 ranks + " differ by a non-finite amount; lower the step base";
        });
    squares_ += report.squared_difference;
  }
  if (settings_.method == Method::optimistic) {
    previous_mean_ = mean_half_;
    previous_own_ = own_half_;
  }
  // X_{t+1} = X_0 + γ_{t+1}·Y_{t+1}.
  gamma_ = step_size();
  for (std::size_t i = 0; i < d_; ++i) {
    x_[i] = anchor_[i] + gamma_ * y_[i];
    half_sum_[i] += half_[i];
  }
  t_ = t;
  report.next_gamma = gamma_;
  report.data_bytes = comm_.data_bytes_sent() - bytes_before;
  return report;
}

std::vector<double> QGenXSolver::average() const {
  if (t_ == 0) return anchor_;
  std::vector<double> a(d_);
  const double n = static_cast<double>(t_);
  for (std::size_t i = 0; i < d_; ++i) a[i] = half_sum_[i] / n;
  return a;
}

std::string QGenXSolver::settings_digest() const {
  std::ostringstream text;
  text.precision(17);
  text << to_string(settings_.method) << " "
       << (settings_.step_rule == StepRule::adaptive ? "adaptive" : "constant") << " "
       << settings_.step_base << " " << settings_.scale_by_ranks << " ranks " << comm_.size()
       << " d " << d_ << " codec " << codec_.spec();
  return text.str();
}

std::vector<std::byte> QGenXSolver::save_state() const {
  ByteWriter out;
  out.value(kStateMagic);
  out.value(kStateVersion);
  out.text(settings_digest());
  out.value(t_);
  out.value(gamma_);
  out.value(squares_);
  for (const auto* v : {&anchor_, &x_, &y_, &half_, &half_sum_, &previous_mean_, &previous_own_}) {
    out.values(std::span<const double>(*v));
  }
  out.value(codec_.step());
  const auto codec_state = codec_.save_state();
  out.values(std::span<const std::byte>(codec_state));
  return out.take();
}

void QGenXSolver::load_state(std::span<const std::byte> state) {
  ByteReader in(state, "the Q-GenX solver state");
  if (in.value<std::uint32_t>("the header") != kStateMagic) in.fail("the header");
  if (in.value<std::uint32_t>("the version") != kStateVersion) in.fail("the version");
  const std::string digest = in.text("the settings");
  if (digest != settings_digest()) {
    throw InvalidArgument("the Q-GenX solver state was saved with settings '" + digest +
                          "', this solver has '" + settings_digest() +
                          "'; resume with the same method, step, ranks, problem and codec");
  }
  const auto t = in.value<std::uint64_t>("the iteration");
  const auto gamma = in.value<double>("the step size");
  const auto squares = in.value<double>("the sum of squares");
  std::vector<std::vector<double>> vectors;
  for (const char* name : {"X_0", "X", "Y", "X_{t+1/2}", "the average's sum",
                           "the previous mean", "the previous own vector"}) {
    vectors.push_back(in.values<double>(name));
    if (vectors.back().size() != d_) in.fail(name);
  }
  const auto codec_step = in.value<std::uint64_t>("the codec step");
  const auto codec_state = in.values<std::byte>("the codec state");
  if (!in.done()) in.fail("the end");
  codec_.load_state(codec_state);  // may throw: nothing of ours changed yet
  codec_.set_step(codec_step);
  t_ = t;
  gamma_ = gamma;
  squares_ = squares;
  anchor_ = std::move(vectors[0]);
  x_ = std::move(vectors[1]);
  y_ = std::move(vectors[2]);
  half_ = std::move(vectors[3]);
  half_sum_ = std::move(vectors[4]);
  previous_mean_ = std::move(vectors[5]);
  previous_own_ = std::move(vectors[6]);
}

std::uint64_t QGenXSolver::replica_checksum() const {
  std::uint64_t sum = kChecksumSeed;
  for (const auto* v : {&x_, &y_, &half_, &half_sum_, &previous_mean_}) {
    sum = checksum64(bytes_of(*v), sum);
  }
  const double scalars[] = {gamma_, squares_, static_cast<double>(t_)};
  return checksum64(std::as_bytes(std::span<const double>(scalars)), sum);
}

void QGenXSolver::check_replicas() {
  exchange_.check_replicas(replica_checksum(), "qgenx replica check", t_,
                           "Q-GenX iteration " + std::to_string(t_));
}

}  // namespace qccl::vi
