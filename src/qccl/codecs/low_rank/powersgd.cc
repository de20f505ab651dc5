#include "qccl/codecs/low_rank/powersgd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/low_rank/powersgd_math.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {

PowerSgdShape powersgd_shape(const TensorSlice& tensor, const PowerSgdConfig& config) {
  PowerSgdShape shape;
  if (tensor.shape.size() < 2 || tensor.elements == 0) return shape;
  shape.rows = static_cast<std::size_t>(tensor.shape[0]);
  shape.cols = tensor.elements / shape.rows;
  shape.rank = std::min({shape.rows, shape.cols, config.rank});
  // Uncompressed n·m values against r·(n + m) for the two factors.
  const double n = static_cast<double>(shape.rows), m = static_cast<double>(shape.cols);
  shape.compressed = n * m > config.min_rate * static_cast<double>(shape.rank) * (n + m);
  return shape;
}

namespace {

// A compressed tensor and the places of its factors in the step's two
// buffers: P (rank columns of rows) in the first, Q (rank columns of cols)
// in the second.
struct Factor {
  TensorSlice tensor;
  PowerSgdShape shape;
  std::size_t p_offset = 0;
  std::size_t q_offset = 0;
  std::size_t p_size() const { return shape.rank * shape.rows; }
  std::size_t q_size() const { return shape.rank * shape.cols; }
};

// The tensors of one step: the compressed ones, then the uncompressed ones,
// which follow every P in the first buffer (`plain_offset` onward, in layout
// order).
struct StepPlan {
  std::vector<Factor> factors;
  std::vector<TensorSlice> plain;
  std::size_t plain_offset = 0;  // = the P's total size
  std::size_t first_size = 0;    // P's and uncompressed elements
  std::size_t second_size = 0;   // Q's
};

std::string on_off(bool on) { return on ? "on" : "off"; }

// FNV-1a over 32-bit words: a cheap digest of the warm-start Q's.
std::size_t hash_floats(std::span<const float> values) {
  std::uint64_t h = 1469598103934665603ULL;
  for (float v : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 1099511628211ULL;
  }
  return static_cast<std::size_t>(h);
}

class PowerSgdCodec final : public Codec {
 public:
  PowerSgdCodec(PowerSgdConfig config, CodecSettings settings)
      : Codec(settings), config_(config) {}

  std::string spec() const override {
    return "powersgd:rank=" + std::to_string(config_.rank) +
           ",warm_start=" + on_off(config_.warm_start) + ",ef=" + on_off(config_.error_feedback) +
           ",min_rate=" + format_number(config_.min_rate);
  }
  // Allreduce only: the factors are of whole tensors. Both allreduces are
  // fp32 sums, which the transport's own allreduce can run.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .operations = {.allreduce_mean = true, .reduce_scatter_mean = false, .allgather = false},
            .native_equivalent = true};
  }
  CodecBounds bounds(const BoundsQuery& query) const override {
    return {encoded_bytes(query.count), abs_error(query.inf_norm, query.ranks)};
  }

 protected:
  // What each of the step's two allreduces runs (and what tools time).
  std::unique_ptr<Encoding> step_encoding(const StepSetup&) override {
    return std::make_unique<Fp32Sum>();
  }
  void run_operation(Communicator& comm, const Operation& operation,
                     const CollectiveOptions& options) override;

 private:
  StepPlan plan(std::size_t length) const;
  std::size_t encoded_bytes(std::size_t count) const;
  double abs_error(double inf_norm, int ranks) const;
  std::string digest(const StepSetup& setup) const;
  bool compresses_any() const;
  std::span<const float> compensated(std::span<const float> g, const StepPlan& plan);
  void start_q(const Factor& f, std::span<float> q, std::uint64_t step);
  void draw_q(const Factor& f, std::span<float> q, std::uint64_t step) const;
  void compress(const StepPlan& plan, std::span<const float> m, std::uint64_t step);
  // Of P (first) or Q (second).
  void check_sums_finite(const StepPlan& plan, bool second) const;
  void project_back(const StepPlan& plan, std::span<const float> m, bool keep_local);
  void finish_q(const StepPlan& plan, int ranks);
  void own_parts(const StepPlan& plan, std::span<const float> m, std::span<float> own);
  void results(const StepPlan& plan, int ranks, std::span<float> output);
  CollectiveCall begin_checked_step(Communicator& comm, StepSetup& setup,
                                   std::span<const float> m,
                                   const CollectiveOptions& options) const;
  // M·2^-shift for the sums (see run_operation), or M itself.
  std::span<const float> scaled(std::span<const float> m);

  // This step's power of two: the factors and sums are those of M·2^-shift.
  int shift_ = 0;

  PowerSgdConfig config_;
  // Reused buffers: M = g + e; the step's two allreduce buffers; the Q's
  // that start the power step; this rank's own Q = Mᵀ·P̂ before the sum; and
  // the fp64 work space of the linear algebra.
  std::vector<float> compensated_, scaled_, first_, second_, start_q_, local_q_, row_;
  std::vector<double> workspace_;
};

StepPlan PowerSgdCodec::plan(std::size_t length) const {
  StepPlan plan;
  std::size_t q_total = 0;
  for (TensorSlice& t : layout().tensors(length)) {
    const PowerSgdShape shape = powersgd_shape(t, config_);
    if (!shape.compressed) {
      plan.plain.push_back(std::move(t));
      continue;
    }
    Factor f{std::move(t), shape, plan.plain_offset, q_total};
    plan.plain_offset += f.p_size();
    q_total += f.q_size();
    plan.factors.push_back(std::move(f));
  }
  plan.first_size = plan.plain_offset;
  for (const TensorSlice& t : plan.plain) plan.first_size += t.elements;
  plan.second_size = q_total;
  return plan;
}

bool PowerSgdCodec::compresses_any() const {
  return !layout().unnamed() && !plan(layout().total()).factors.empty();
}

// What one rank contributes: both factors of every compressed tensor, every
// other tensor whole.
std::size_t PowerSgdCodec::encoded_bytes(std::size_t count) const {
  if (layout().unnamed() || layout().total() != count) return count * sizeof(float);
  const StepPlan p = plan(count);
  return (p.first_size + p.second_size) * sizeof(float);
}

// Without a compressed tensor the step is the fp32 mean, with its bound; a
// rank-r approximation has none against the input (and with error feedback
// the result carries the residuals too).
double PowerSgdCodec::abs_error(double inf_norm, int ranks) const {
  if (compresses_any()) return std::numeric_limits<double>::infinity();
  return ranks * std::ldexp(inf_norm, -23);
}

// The layout decides the sizes of both allreduces, and the warm-start Q's
// must be the same on every rank (they are the last step's sums; a rank that
// resumed from another checkpoint would differ): both enter the call check.
std::string PowerSgdCodec::digest(const StepSetup& setup) const {
  std::string digest = " layout#" + std::to_string(layout().fingerprint());
  if (!config_.warm_start) return digest;
  std::vector<std::size_t> hashes;
  for (const Factor& f : plan(setup.input.size()).factors) {
    if (!state_store().contains(f.tensor.name, kPowerSgdQField)) continue;
    hashes.push_back(f.tensor.offset);
    hashes.push_back(hash_floats(state_store().floats(f.tensor.name, kPowerSgdQField, f.q_size())));
  }
  return digest + " q#" + std::to_string(hash62(hashes));
}

// Algorithm 2, line 7: Δ_w = g_w + e_w for the compressed tensors (error
// feedback); the others are summed exactly and keep no residual.
std::span<const float> PowerSgdCodec::compensated(std::span<const float> g, const StepPlan& plan) {
  if (!config_.error_feedback || plan.factors.empty()) return g;
  compensated_.assign(g.begin(), g.end());
  for (const Factor& f : plan.factors) {
    const auto e = state_store().floats(f.tensor.name, kPowerSgdResidualField, f.tensor.elements);
    float* __restrict m = compensated_.data() + f.tensor.offset;
    for (std::size_t j = 0; j < f.tensor.elements; ++j) m[j] += e[j];
  }
  return compensated_;
}

// A standard normal Q (Algorithm 1, line 1), the same on every rank: keyed
// by (seed, step, bucket, the tensor's name) — the name in the rank's place
// of the key, since Q must not depend on the rank. Box–Muller on 32-bit
// uniforms.
void PowerSgdCodec::draw_q(const Factor& f, std::span<float> q, std::uint64_t step) const {
  const CounterRng rng(settings().seed, step, settings().bucket,
                       static_cast<std::uint64_t>(hash62(f.tensor.name)), RngStream::shared);
  for (std::size_t e = 0; e < q.size(); ++e) {
    const std::uint64_t bits = rng.bits64(e);
    const double u1 = (static_cast<double>(bits >> 32) + 0.5) * 0x1p-32;  // in (0, 1)
    const double u2 = static_cast<double>(bits & 0xFFFFFFFFULL) * 0x1p-32;
    q[e] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2.0 * std::numbers::pi * u2));
  }
}

// The Q a power step starts from: the last step's (warm start, §3) or a
// fresh draw, with orthonormal columns. Orthonormalising Q (as PyTorch's
// hook does) leaves span(M·Q), hence P̂, unchanged, and keeps a warm Q's
// scale from drifting with the gradients' over many steps. A warm Q that
// has lost a column (a gradient of zero makes Q = 0, and P = M·Q = 0 would
// keep it there) is drawn afresh.
void PowerSgdCodec::start_q(const Factor& f, std::span<float> q, std::uint64_t step) {
  const bool warm = config_.warm_start && state_store().contains(f.tensor.name, kPowerSgdQField);
  if (warm) {
    const auto kept = state_store().floats(f.tensor.name, kPowerSgdQField, f.q_size());
    std::copy(kept.begin(), kept.end(), q.begin());
  } else {
    draw_q(f, q, step);
  }
  const std::size_t lost = powersgd::orthonormalise(q, f.shape.rank, f.shape.cols, workspace_);
  if (lost > 0 && warm) {
    draw_q(f, q, step);
    powersgd::orthonormalise(q, f.shape.rank, f.shape.cols, workspace_);
  }
}

// Algorithm 1, line 3: P = M·Q for every compressed tensor, and the
// uncompressed tensors after the P's, into the first allreduce's buffer.
void PowerSgdCodec::compress(const StepPlan& plan, std::span<const float> m, std::uint64_t step) {
  first_.resize(plan.first_size);
  start_q_.resize(plan.second_size);
  for (const Factor& f : plan.factors) {
    const auto q = std::span<float>(start_q_).subspan(f.q_offset, f.q_size());
    start_q(f, q, step);
    powersgd::multiply(m.subspan(f.tensor.offset, f.tensor.elements), f.shape.rows, f.shape.cols,
                       q, f.shape.rank, std::span<float>(first_).subspan(f.p_offset, f.p_size()));
  }
  std::size_t at = plan.plain_offset;
  for (const TensorSlice& t : plan.plain) {
    std::copy_n(m.begin() + static_cast<long>(t.offset), t.elements,
                first_.begin() + static_cast<long>(at));
    at += t.elements;
  }
}

// Finite inputs can still sum to Inf in M·Q (or Mᵀ·P̂). The sums are the
// same on every rank, so every rank raises the same error here, after the
// allreduce completed everywhere and before any state changed: the
// communicator stays usable and the step can be skipped.
void PowerSgdCodec::check_sums_finite(const StepPlan& plan, bool second) const {
  for (const Factor& f : plan.factors) {
    const float* sums = second ? second_.data() + f.q_offset : first_.data() + f.p_offset;
    if (kernels::max_abs_bits(sums, second ? f.q_size() : f.p_size()) < 0x7F800000U) continue;
    throw NonFiniteError(step_name() + ": the sum over ranks of " +
                         (second ? "Mᵀ·P" : "M·Q") + " for tensor '" + f.tensor.name +
                         "' overflowed fp32 (gradients too large); the step was skipped on "
                         "every rank and the codec's state is unchanged");
  }
}

// Algorithm 1, lines 5–6: P̂ = orthogonalise(Σ P) — the same on every rank,
// from the same sums — then this rank's Q = Mᵀ·P̂ into the second buffer,
// kept aside when this rank's own part is needed.
void PowerSgdCodec::project_back(const StepPlan& plan, std::span<const float> m,
                                 bool keep_local) {
  second_.resize(plan.second_size);
  for (const Factor& f : plan.factors) {
    const auto p = std::span<float>(first_).subspan(f.p_offset, f.p_size());
    powersgd::orthonormalise(p, f.shape.rank, f.shape.rows, workspace_);
    powersgd::multiply_transposed(m.subspan(f.tensor.offset, f.tensor.elements), f.shape.rows,
                                  f.shape.cols, p, f.shape.rank,
                                  std::span<float>(second_).subspan(f.q_offset, f.q_size()),
                                  workspace_);
  }
  if (keep_local) local_q_ = second_;
}

// Algorithm 1, line 7: Q̄ = Σ_i M_iᵀ·P̂ / n, kept for the next step (warm
// start).
void PowerSgdCodec::finish_q(const StepPlan& plan, int ranks) {
  const auto n = static_cast<float>(ranks);
  for (float& q : second_) q /= n;
  if (!config_.warm_start) return;
  for (const Factor& f : plan.factors) {
    const auto kept = state_store().floats(f.tensor.name, kPowerSgdQField, f.q_size());
    std::copy_n(second_.begin() + static_cast<long>(f.q_offset), f.q_size(), kept.begin());
  }
}

// The least power of two 2^-k that keeps every sum of the step inside fp32
// for inputs of ∞-norm `norm` on `ranks` ranks: an entry of P = M·Q (Q with
// orthonormal columns) is at most √cols·norm, one of Mᵀ·P̂ at most
// √rows·norm, an uncompressed element at most norm; n of them sum to n
// times that. 0 (no scaling, the results as they always were) unless the
// bound exceeds FLT_MAX/4 (a margin for fp32's rounding of Q and P̂).
int sum_shift(const StepPlan& plan, double norm, int ranks) {
  double largest = norm;
  for (const Factor& f : plan.factors) {
    const auto longest = static_cast<double>(std::max(f.shape.rows, f.shape.cols));
    largest = std::max(largest, std::sqrt(longest) * norm);
  }
  int shift = 0;
  while (std::ldexp(ranks * largest, -shift) > FLT_MAX / 4) ++shift;
  return shift;
}

std::span<const float> PowerSgdCodec::scaled(std::span<const float> m) {
  if (shift_ == 0) return m;
  const float down = std::ldexp(1.0f, -shift_);
  scaled_.resize(m.size());
  for (std::size_t j = 0; j < m.size(); ++j) scaled_[j] = m[j] * down;
  return scaled_;
}

// Algorithm 2, line 9. The result P̂·Q̄ᵀ is mean_i P̂·P̂ᵀ·M_i. This rank's own
// part of it — what it would decompress from its own compressed update
// (P̂, M_iᵀ·P̂) — is P̂·(M_iᵀ·P̂)ᵀ = P̂·P̂ᵀ·M_i, and the residual it keeps is
// e_i = M_i − P̂·P̂ᵀ·M_i: own + e = M as computed, and the mean over ranks
// of the residuals is what the result left out of the mean of the M_i.
// (PyTorch's hook keeps M_i − P̂·Q̄ᵀ instead: the same mean over ranks,
// split differently between them.) Uncompressed tensors: own = M, no
// residual. The products are of M·2^-shift: scaled back, saturated at
// fp32's range (levels.h).
void PowerSgdCodec::own_parts(const StepPlan& plan, std::span<const float> m,
                              std::span<float> own) {
  const double up = std::ldexp(1.0, shift_);
  for (const Factor& f : plan.factors) {
    const auto p = std::span<const float>(first_).subspan(f.p_offset, f.p_size());
    const auto local = std::span<const float>(local_q_).subspan(f.q_offset, f.q_size());
    const auto e = config_.error_feedback
                       ? state_store().floats(f.tensor.name, kPowerSgdResidualField, f.tensor.elements)
                       : std::span<float>();
    row_.resize(f.shape.cols);
    for (std::size_t i = 0; i < f.shape.rows; ++i) {
      powersgd::product_row(p, f.shape.rows, i, local, f.shape.cols, f.shape.rank, row_, workspace_);
      if (shift_ > 0) {
        for (float& x : row_) x = saturate_to_fp32(x * up);
      }
      const std::size_t at = f.tensor.offset + i * f.shape.cols;
      if (!own.empty()) std::copy(row_.begin(), row_.end(), own.begin() + static_cast<long>(at));
      if (e.empty()) continue;
      float* __restrict residual = e.data() + i * f.shape.cols;
      const float* __restrict mi = m.data() + at;
      for (std::size_t j = 0; j < f.shape.cols; ++j) residual[j] = mi[j] - row_[j];
    }
  }
  if (own.empty()) return;
  for (const TensorSlice& t : plan.plain) {
    std::copy_n(m.begin() + static_cast<long>(t.offset), t.elements,
                own.begin() + static_cast<long>(t.offset));
  }
}

// Algorithm 1, line 11: P̂·Q̄ᵀ for the compressed tensors, the mean of the
// sums for the others; times 2^shift, saturated.
void PowerSgdCodec::results(const StepPlan& plan, int ranks, std::span<float> output) {
  const double up = std::ldexp(1.0, shift_);
  for (const Factor& f : plan.factors) {
    const auto p = std::span<const float>(first_).subspan(f.p_offset, f.p_size());
    const auto q = std::span<const float>(second_).subspan(f.q_offset, f.q_size());
    for (std::size_t i = 0; i < f.shape.rows; ++i) {
      const auto row = output.subspan(f.tensor.offset + i * f.shape.cols, f.shape.cols);
      powersgd::product_row(p, f.shape.rows, i, q, f.shape.cols, f.shape.rank, row, workspace_);
      if (shift_ == 0) continue;
      for (float& x : row) x = saturate_to_fp32(x * up);
    }
  }
  const auto n = static_cast<float>(ranks);
  std::size_t at = plan.plain_offset;
  for (const TensorSlice& t : plan.plain) {
    for (std::size_t j = 0; j < t.elements; ++j) {
      output[t.offset + j] =
          shift_ == 0 ? first_[at + j] / n : saturate_to_fp32(first_[at + j] * up / ranks);
    }
    at += t.elements;
  }
}

// The step's exchange on M. With error feedback M = g + e: a residual
// kept from earlier steps plus a gradient near fp32's largest value can
// overflow, which the message names (raised on every rank alike).
CollectiveCall PowerSgdCodec::begin_checked_step(Communicator& comm, StepSetup& setup,
                                                 std::span<const float> m,
                                                 const CollectiveOptions& options) const {
  try {
    return begin_step(comm, setup, local_norm_statistic(m, norm_kind()), m.size(), options,
                      {digest(setup)});
  } catch (const NonFiniteError& e) {
    if (!config_.error_feedback) throw;
    throw NonFiniteError(step_name() + ": the gradient plus the residual kept from earlier "
                         "steps, g + e, is not finite: a gradient near fp32's largest value "
                         "(about 3.4e38) plus its residual overflows fp32, or the gradient holds "
                         "NaN or Inf; the codec's state is unchanged. Scale the loss or the "
                         "gradients down. (" + std::string(e.what()) + ")");
  }
}

// One step: the call check (with every rank's statistics, so non-finite
// input anywhere stops every rank before data moves), then Algorithm 1's
// two allreduces inside that one call. Encode time: M·Q, the
// orthogonalisation and Mᵀ·P̂; decode time: the products P̂·Qᵀ. When the
// global norm says a sum could overflow fp32 (sum_shift), the power step
// runs on M·2^-k — exact, a power of two, and P̂ is the same — and the
// results are scaled back.
void PowerSgdCodec::run_operation(Communicator& comm, const Operation& operation,
                                  const CollectiveOptions& options) {
  const std::size_t d = operation.input.size();
  layout().check(d, step_name());
  StepSetup setup = step_setup(operation.kind, options.algorithm, comm.size(), comm.rank());
  setup.input = operation.input;
  setup.input_length = d;
  const StepPlan step_plan = plan(d);
  const std::span<const float> m = compensated(operation.input, step_plan);
  CollectiveCall call = begin_checked_step(comm, setup, m, options);
  Fp32Sum sum;
  shift_ = sum_shift(step_plan, setup.norm, comm.size());
  const std::span<const float> m_scaled = scaled(m);
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    compress(step_plan, m_scaled, setup.step);
  }
  if (!first_.empty()) {
    call.move([&](int tag) { allreduce_body(comm, tag, first_, first_, sum, options); });
  }
  check_sums_finite(step_plan, false);
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    project_back(step_plan, m_scaled, config_.error_feedback || !operation.own.empty());
  }
  if (!second_.empty()) {
    call.move([&](int tag) { allreduce_body(comm, tag, second_, second_, sum, options); });
  }
  check_sums_finite(step_plan, true);
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  finish_q(step_plan, comm.size());
  if (config_.error_feedback || !operation.own.empty()) own_parts(step_plan, m, operation.own);
  // The output last: with error feedback off, m is the input, which the
  // output may overwrite.
  results(step_plan, comm.size(), operation.output);
}

PowerSgdConfig read_config(const SpecSyntax& spec) {
  PowerSgdConfig config;
  CodecParams params(spec);
  const double rank = params.number("rank", 1, 64, 2);
  if (rank != std::floor(rank)) {
    throw InvalidArgument("codec " + spec.name + ": rank=" + format_number(rank) +
                          " is not valid; give a whole number in [1, 64]");
  }
  config.rank = static_cast<std::size_t>(rank);
  config.warm_start = params.choice("warm_start", {"on", "off"}, "on") == "on";
  config.error_feedback = params.choice("ef", {"on", "off"}, "on") == "on";
  config.min_rate = params.number("min_rate", 0, 1e6, 2);
  params.finish();
  return config;
}

}  // namespace

std::unique_ptr<Codec> make_powersgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  return std::make_unique<PowerSgdCodec>(read_config(spec), settings);
}

}  // namespace qccl
