#include "qccl/codecs/quantizers/intsgd.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "qccl/codecs/fp32_mean.h"
#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/quantizers/integer_sum_reduction.h"
#include "qccl/codecs/levels.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::string_view scheme_name(IntegerScheme scheme) {
  switch (scheme) {
    case IntegerScheme::adaptive: return "intsgd";
    case IntegerScheme::heuristic: return "intsgd-heuristic";
    case IntegerScheme::diana: return "intdiana";
  }
  return "?";
}

// 1/x with 1/inf = 0: what an infinite scale decodes to.
double inverse(double x) { return std::isinf(x) ? 0.0 : 1.0 / x; }

// A decoded fp64 value as the caller's type: fp32 saturates at its range
// (levels.h).
template <class T>
T to_output(double x) {
  if constexpr (std::is_same_v<T, float>) {
    return saturate_to_fp32(x);
  } else {
    return x;
  }
}

constexpr double kStateVersion = 3;
constexpr std::string_view kScaleField = "intsgd.scale";
constexpr std::string_view kLocalShiftField = "intdiana.local_shift";
constexpr std::string_view kGlobalShiftField = "intdiana.global_shift";

}  // namespace

IntegerCodec::IntegerCodec(IntegerCodecConfig config, CodecSettings settings)
    : Codec(settings), config_(config), scale_(config.beta, config.epsilon) {
  if (config_.scheme != IntegerScheme::heuristic) offer_step_feedback(this);
}

std::string IntegerCodec::spec() const {
  std::string text = std::string(scheme_name(config_.scheme)) +
                     ":round=" + std::string(to_string(config_.rounding)) +
                     ",wire=" + std::string(to_string(config_.wire));
  if (config_.scheme != IntegerScheme::heuristic) {
    text += ",beta=" + format_number(config_.beta) + ",eps=" + format_number(config_.epsilon);
  }
  return text;
}

// No allgather (integers of one rank are not a mean); IntDIANA's shifts
// follow the whole vector, so it has no reduce-scatter either. Device data:
// every wire's rounding and sums as element forms (int8 and int32 in fp32,
// int64 in fp64); not IntDIANA, whose shifts live on the host.
CodecTraits IntegerCodec::traits() const {
  return {.unbiased = config_.rounding == IntRounding::random,
          .operations = {.allreduce_mean = true,
                         .reduce_scatter_mean = config_.scheme != IntegerScheme::diana,
                         .allgather = false},
          .device_step = config_.scheme != IntegerScheme::diana};
}

CodecBounds IntegerCodec::bounds(const BoundsQuery& query) const {
  return {query.count * wire_bytes_per_element(config_.wire),
          abs_error(query.inf_norm, query.ranks), variance(query.count, query.ranks)};
}

std::span<double> IntegerCodec::scale_state(const TensorSlice& tensor) const {
  return state_store().doubles(tensor.name, kScaleField, AdaptiveScale::kStateValues);
}

std::span<double> IntegerCodec::shift(const TensorSlice& tensor, bool global) const {
  return state_store().doubles(tensor.name, global ? kGlobalShiftField : kLocalShiftField,
                               tensor.elements);
}

bool IntegerCodec::ready() const {
  for (const TensorSlice& t : layout().tensors(scaled_length())) {
    if (!AdaptiveScale::observed(scale_state(t))) return false;
  }
  return true;
}

// The heuristic's α (§5.2): 2^max_exp is the power of two just above the
// largest |x| over all ranks, so |α·x| < (2^(b−1) − 1)/n. The adaptive
// scheme's: one α per tensor from its own history.
std::vector<double> IntegerCodec::step_scales(double norm, std::size_t length, int ranks) const {
  const auto tensors = layout().tensors(length);
  std::vector<double> scales(tensors.size());
  if (config_.scheme == IntegerScheme::heuristic) {
    int exponent = 0;
    std::frexp(norm, &exponent);  // norm < 2^exponent
    const double largest = std::ldexp(1.0, wire_bits(config_.wire) - 1) - 1;
    std::fill(scales.begin(), scales.end(), std::ldexp(largest / ranks, -exponent));
    return scales;
  }
  for (std::size_t l = 0; l < tensors.size(); ++l) {
    // An empty tensor has nothing to scale; any positive α will do.
    scales[l] = tensors[l].elements == 0
                    ? 1.0
                    : scale_.alpha(scale_state(tensors[l]), tensors[l].elements, ranks);
  }
  return scales;
}

std::vector<double> IntegerCodec::scales(std::size_t length, int ranks) const {
  if (config_.scheme == IntegerScheme::heuristic || !ready()) return {};
  return step_scales(0, length, ranks);
}

// The elements the scales are for: the layout's tensors, or for an unnamed
// layout the last update's length.
std::size_t IntegerCodec::scaled_length() const {
  return layout().unnamed() ? observed_length_ : layout().total();
}

StepPreparation IntegerCodec::prepare(Communicator&, const StepSetup& setup, const Operation&,
                                     const CollectiveOptions&) {
  check_length(setup.input_length);
  // A wire too narrow for the sum over this many ranks is refused from the
  // first step on (which is exact, §4.1, and would not notice), on every
  // rank before anything moves.
  try {
    per_rank_clip(config_.wire, setup.summed);
  } catch (const InvalidArgument&) {
    rethrow_with_context(spec() + ": ");
  }
  return {scales_digest(setup.summed)};
}

// The data must cover the layout, and the elements the scales were
// observed for.
void IntegerCodec::check_length(std::size_t length) const {
  layout().check(length, step_name());
  if (config_.scheme != IntegerScheme::heuristic && ready() && length != scaled_length()) {
    throw InvalidArgument(step_name() + ": the last observe_step() update had " +
                          std::to_string(observed_length_) + " elements but the data has " +
                          std::to_string(length) +
                          "; pass the update of exactly the elements this codec reduces");
  }
}

// IntDIANA's g − h_i (Algorithm 3, line 5), tensor by tensor, in fp64.
template <class T>
void IntegerCodec::subtract_local_shift(std::span<const T> g, std::span<T> out) const {
  for (const TensorSlice& t : layout().tensors(g.size())) {
    const auto local = shift(t, false);
    const T* __restrict in = g.data() + t.offset;
    T* __restrict difference = out.data() + t.offset;
    for (std::size_t j = 0; j < t.elements; ++j) {
      difference[j] = static_cast<T>(static_cast<double>(in[j]) - local[j]);
    }
  }
}

// A hash of the scales the next step uses (none for the heuristic's, which
// follow the global norm, or before the first feedback).
std::string IntegerCodec::scales_digest(int ranks) const {
  if (config_.scheme == IntegerScheme::heuristic || exact_step()) return {};
  const auto scales = step_scales(0, scaled_length(), ranks);
  const std::string_view bytes(reinterpret_cast<const char*>(scales.data()),
                               scales.size() * sizeof(double));
  return " scales#" + std::to_string(hash62(bytes));
}

// This step's integer reduction: one scale per tensor, clipped so no sum
// of n ranks can overflow the wire; IntDIANA also keeps this rank's
// integers and the sums for its shifts.
IntegerSumSetup IntegerCodec::reduction_setup(const StepSetup& setup, std::size_t length) {
  IntegerSumSetup rs;
  rs.name = spec();
  rs.alphas = step_scales(setup.norm, length, setup.summed);
  rs.wire = config_.wire;
  rs.rounding = config_.rounding;
  rs.ranks = setup.summed;
  rs.clip = per_rank_clip(config_.wire, setup.summed);
  for (const TensorSlice& t : layout().tensors(length)) rs.block_starts.push_back(t.offset);
  rs.rng = CounterRng(settings().seed, setup.step, settings().bucket,
                      static_cast<std::uint64_t>(setup.rank), RngStream::quantize);
  const std::size_t wire_bytes = length * wire_bytes_per_element(config_.wire);
  if (config_.scheme == IntegerScheme::diana) {
    local_integers_.resize(wire_bytes);
    summed_integers_.resize(wire_bytes);
    rs.local_integers = local_integers_;
    rs.summed_integers = summed_integers_;
  }
  alphas_ = rs.alphas;
  return rs;
}

std::unique_ptr<Encoding> IntegerCodec::step_encoding(const StepSetup& setup) {
  integers_ = nullptr;
  if (exact_step()) return make_fp32_mean_reduction(setup.norm, setup.summed);  // exact first step (§4.1)
  if (config_.scheme == IntegerScheme::heuristic && setup.norm == 0.0) return nullptr;
  auto integers = make_integer_sum_reduction(reduction_setup(setup, setup.input_length));
  integers_ = integers.get();
  return integers;
}

// IntDIANA rounds g_i − h_i: the collective encodes that difference.
void IntegerCodec::move_data(Communicator& comm, int tag, const StepSetup& setup,
                             Encoding& encoding, const Operation& operation,
                             const CollectiveOptions& options) {
  if (config_.scheme != IntegerScheme::diana || exact_step()) {
    default_move_data(comm, tag, setup, encoding, operation, options);
    return;
  }
  fp32_view_.resize(operation.input.size());
  subtract_local_shift<float>(operation.input, fp32_view_);
  Operation difference = operation;
  difference.input = fp32_view_;
  default_move_data(comm, tag, setup, encoding, difference, options);
}

void IntegerCodec::complete_step(const StepSetup& setup, Encoding*, const Operation& operation) {
  step_stats() = CodecStepStats{};
  if (exact_step()) {
    finish_fp32_mean(setup.norm, setup.summed, operation.output);
    return;
  }
  step_stats().integer = true;
  const IntegerSumReduction* integers = std::exchange(integers_, nullptr);
  if (integers == nullptr) return;  // the heuristic's all-zero step
  step_stats().clipped = integers->clipped();
  step_stats().largest_sent = integers->largest_sent();
  step_stats().largest_sum = integers->largest_sum();
  if (config_.scheme == IntegerScheme::diana) {
    finish_integers_of_wire<float>(operation.output, alphas_, setup.summed, operation.own);
  }
}

// Rounding errs by less than one unit per rank (half a unit when
// deterministic), so the mean by less than 1/α — unless a coordinate was
// clipped, which the adaptive rule cannot rule out for inputs of this norm
// when norm·α > c. IntDIANA's error depends on its shifts: no bound. On
// the 32- and 64-bit wires the integers exceed fp32's 24-bit precision:
// α·x rounded in fp32, the sum and the mean rounded to fp32 add up to
// 2^-22 of the norm.
double IntegerCodec::abs_error(double norm, int ranks) const {
  const double infinite = std::numeric_limits<double>::infinity();
  if (config_.scheme == IntegerScheme::diana) return infinite;
  if (exact_step()) return ranks * std::ldexp(norm, -23);  // the exact fp32 step
  const auto scales = step_scales(norm, scaled_length(), ranks);
  const double clip = static_cast<double>(per_rank_clip(config_.wire, ranks));
  double bound = 0;
  for (double alpha : scales) {
    if (config_.scheme == IntegerScheme::adaptive && norm * alpha > clip) return infinite;
    bound = std::max(bound, inverse(alpha));
  }
  return config_.wire == IntWire::int8 ? bound : bound + std::ldexp(norm, -22);
}

// Lemma 1, Eq. (4): E‖Q(x) − x‖² <= Σ_j 1/(4α_j²) per rank; the ranks round
// independently, so the mean's error is Σ_l d_l/(4·n·α_l²). Holds for the
// randomized rounding of the adaptive scheme when nothing is clipped (see
// last_step_stats().clipped); the heuristic clips by design at the edge.
std::optional<double> IntegerCodec::variance(std::size_t d, int ranks) const {
  if (config_.scheme != IntegerScheme::adaptive || config_.rounding != IntRounding::random ||
      !ready() || d != scaled_length()) {
    return std::nullopt;
  }
  const auto scales = step_scales(0, d, ranks);
  const auto tensors = layout().tensors(d);
  double bound = 0;
  for (std::size_t l = 0; l < scales.size(); ++l) {
    const double inv = inverse(scales[l]);
    bound += static_cast<double>(tensors[l].elements) * inv * inv / (4.0 * ranks);
  }
  return bound;
}

void IntegerCodec::observe_step(double next_step_size, std::span<const float> update) {
  observe(next_step_size, update);
}

void IntegerCodec::observe_step(double next_step_size, std::span<const double> update) {
  observe(next_step_size, update);
}

// Proposition 2's r_k from ||x_k − x_{k−1}||² per tensor, given as sums.
void IntegerCodec::observe_step_norms(double next_step_size, std::span<const double> squared_norms,
                                      std::size_t elements) {
  if (config_.scheme == IntegerScheme::heuristic) return;
  check_step_size(next_step_size);
  layout().check(elements, spec() + " observe_step_norms");
  const auto tensors = layout().tensors(elements);
  if (squared_norms.size() != tensors.size()) {
    throw InvalidArgument(spec() + " observe_step_norms: " + std::to_string(squared_norms.size()) +
                          " squared norms for a layout of " + std::to_string(tensors.size()) +
                          " tensors; pass one per tensor, in layout order");
  }
  for (std::size_t l = 0; l < tensors.size(); ++l) {
    if (!(squared_norms[l] >= 0) || std::isinf(squared_norms[l])) {
      throw InvalidArgument(spec() + " observe_step_norms: tensor " + std::to_string(l) +
                            "'s squared norm is " + std::to_string(squared_norms[l]) +
                            "; it must be finite and non-negative");
    }
    scale_.observe(scale_state(tensors[l]), squared_norms[l], next_step_size);
  }
  observed_length_ = elements;
}

template <class T>
void IntegerCodec::observe(double next_step_size, std::span<const T> update) {
  if (config_.scheme == IntegerScheme::heuristic) return;
  check_step_size(next_step_size);
  layout().check(update.size(), spec() + " observe_step");
  for (const TensorSlice& t : layout().tensors(update.size())) {
    double sum = 0;
    for (std::size_t j = t.offset; j < t.offset + t.elements; ++j) {
      sum += static_cast<double>(update[j]) * static_cast<double>(update[j]);
    }
    scale_.observe(scale_state(t), sum, next_step_size);
  }
  observed_length_ = update.size();
}

// The fp64 step (see the header): the same parts as the fp32 operation, with
// the integers rounded exactly from fp64 values; only the fp32 view the
// collective decodes into is fp32, and it is overwritten by the fp64 decode.
void IntegerCodec::allreduce_mean(Communicator& comm, std::span<double> data,
                                  const CollectiveOptions& options) {
  const std::size_t d = data.size();
  StepSetup setup =
      step_setup(CodecOperation::allreduce_mean, options.algorithm, comm.size(), comm.rank());
  if (options.algorithm == Algorithm::native) {
    throw InvalidArgument(step_name() + ": runs on algorithm ring or halving-doubling (qccl's "
                          "collectives sum its integers)");
  }
  check_length(d);
  CollectiveCall call = begin_step(comm, setup, local_norm_statistic(std::span<const double>(data),
                                                                     NormKind::inf),
                                   d, options, {scales_digest(setup.summed)});
  const int n = comm.size();
  step_stats() = CodecStepStats{};
  if (exact_step()) {  // §4.1: the first communication is exact
    call.move([&](int) {
      allreduce_values<double>(comm.transport(), data, ReduceOp::sum, call.timeout());
    });
    for (double& x : data) x /= n;
  } else if (config_.scheme == IntegerScheme::heuristic && setup.norm == 0.0) {
    std::fill(data.begin(), data.end(), 0.0);
    step_stats().integer = true;
  } else {
    sum_integers_fp64(comm, call, setup, data, options);
  }
  set_step(step() + 1);
}

// The fp32 path's reduction reads its fp64 source directly (IntDIANA's
// g − h_i, or the data), and an fp32 vector of the same length stands for
// the elements in the collective's layout.
void IntegerCodec::sum_integers_fp64(Communicator& comm, CollectiveCall& call,
                                     const StepSetup& setup, std::span<double> data,
                                     const CollectiveOptions& options) {
  const std::size_t d = data.size();
  IntegerSumSetup rs = reduction_setup(setup, d);
  if (config_.scheme == IntegerScheme::diana) {
    difference_.resize(d);
    subtract_local_shift<double>(std::span<const double>(data), difference_);
    rs.source = difference_;
  } else {
    rs.source = data;
    summed_integers_.resize(d * wire_bytes_per_element(config_.wire));
    rs.summed_integers = summed_integers_;
  }
  fp32_view_.assign(d, 0.0f);
  const auto reduction = make_integer_sum_reduction(std::move(rs));
  call.move([&](int tag) {
    allreduce_body(comm, tag, fp32_view_, fp32_view_, *reduction, options);
  });
  step_stats() = CodecStepStats{true, reduction->clipped(), reduction->largest_sent(),
                                reduction->largest_sum()};
  finish_integers_of_wire<double>(data, alphas_, setup.ranks, {});
}

template <class T>
void IntegerCodec::finish_integers_of_wire(std::span<T> data, std::span<const double> alphas,
                                           int ranks, std::span<float> own) {
  switch (config_.wire) {
    case IntWire::int8: finish_integers<std::int8_t>(data, alphas, ranks, own); break;
    case IntWire::int32: finish_integers<std::int32_t>(data, alphas, ranks, own); break;
    case IntWire::int64: finish_integers<std::int64_t>(data, alphas, ranks, own); break;
  }
}

// Decodes the aggregated integers in fp64: the mean Σ/(n·α_l), or for
// IntDIANA h_i += Q_i/α_l, h += mean, result h (Algorithm 3, lines 8, 12,
// 14) — and this rank's own contribution is then h_i.
template <class Int, class T>
void IntegerCodec::finish_integers(std::span<T> data, std::span<const double> alphas, int ranks,
                                   std::span<float> own) {
  const Int* __restrict sums = reinterpret_cast<const Int*>(summed_integers_.data());
  const Int* __restrict mine = reinterpret_cast<const Int*>(local_integers_.data());
  const bool diana = config_.scheme == IntegerScheme::diana;
  const auto tensors = layout().tensors(data.size());
  for (std::size_t l = 0; l < alphas.size(); ++l) {
    const TensorSlice& t = tensors[l];
    const double mean_factor = inverse(ranks * alphas[l]), unscale = inverse(alphas[l]);
    T* __restrict out = data.data() + t.offset;
    const Int* __restrict sum = sums + t.offset;
    if (diana) {
      double* __restrict local = shift(t, false).data();
      double* __restrict global = shift(t, true).data();
      const Int* __restrict q = mine + t.offset;
      for (std::size_t j = 0; j < t.elements; ++j) {
        local[j] += static_cast<double>(q[j]) * unscale;
        global[j] += static_cast<double>(sum[j]) * mean_factor;
        out[j] = to_output<T>(global[j]);
      }
      if (!own.empty()) {
        for (std::size_t j = 0; j < t.elements; ++j) own[t.offset + j] = saturate_to_fp32(local[j]);
      }
    } else {
      for (std::size_t j = 0; j < t.elements; ++j) {
        out[j] = to_output<T>(static_cast<double>(sum[j]) * mean_factor);
      }
    }
  }
}

// [count, version, scheme, observed length] as fp64 values (lengths below
// 2^53 are exact), then the per-tensor store when this instance owns it.
std::vector<std::byte> IntegerCodec::save_state() const {
  const std::vector<double> values{kStateVersion, static_cast<double>(config_.scheme),
                                   static_cast<double>(observed_length_)};
  const std::uint64_t count = values.size();
  std::vector<std::byte> bytes(sizeof count + values.size() * sizeof(double));
  std::memcpy(bytes.data(), &count, sizeof count);
  std::memcpy(bytes.data() + sizeof count, values.data(), values.size() * sizeof(double));
  const auto store = Codec::save_state();
  bytes.insert(bytes.end(), store.begin(), store.end());
  return bytes;
}

void IntegerCodec::load_state(std::span<const std::byte> state) {
  const auto corrupt = [&](std::string_view why) {
    return InvalidArgument(spec() + ": cannot load the saved codec state: " + std::string(why) +
                           " (was the checkpoint written with this codec?)");
  };
  std::uint64_t count = 0;
  if (state.size() < sizeof count) throw corrupt("it is truncated");
  std::memcpy(&count, state.data(), sizeof count);
  if (count != 3 || state.size() < sizeof count + count * sizeof(double)) {
    throw corrupt("it is truncated or of another version");
  }
  double values[3];
  std::memcpy(values, state.data() + sizeof count, sizeof values);
  if (values[0] != kStateVersion) throw corrupt("unknown version");
  if (values[1] != static_cast<double>(config_.scheme)) throw corrupt("it belongs to another scheme");
  Codec::load_state(state.subspan(sizeof count + sizeof values));
  observed_length_ = static_cast<std::size_t>(values[2]);
}

namespace {

IntegerCodecConfig read_config(const SpecSyntax& spec, IntegerScheme scheme) {
  IntegerCodecConfig config;
  config.scheme = scheme;
  CodecParams params(spec);
  config.rounding = params.choice("round", {"random", "deterministic"}, "random") == "random"
                        ? IntRounding::random
                        : IntRounding::deterministic;
  const std::string wire = params.choice("wire", {"int8", "int32", "int64"}, "int8");
  config.wire = wire == "int8" ? IntWire::int8 : wire == "int32" ? IntWire::int32 : IntWire::int64;
  if (scheme != IntegerScheme::heuristic) {
    // Algorithm 1's defaults; IntDIANA's α (Algorithm 3) has no moving average.
    config.beta = params.number("beta", 0.0, 0.999999, scheme == IntegerScheme::diana ? 0.0 : 0.9);
    config.epsilon = params.number("eps", 0.0, 1e300, 1e-8);
  }
  params.finish();
  return config;
}

}  // namespace

std::unique_ptr<Codec> make_intsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::adaptive), settings);
}
std::unique_ptr<Codec> make_heuristic_intsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::heuristic), settings);
}
std::unique_ptr<Codec> make_intdiana_codec(const SpecSyntax& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::diana), settings);
}

std::unique_ptr<IntegerCodec> make_integer_codec(std::string_view text, CodecSettings settings) {
  const SpecSyntax spec = parse_spec_syntax(text);
  for (IntegerScheme scheme :
       {IntegerScheme::adaptive, IntegerScheme::heuristic, IntegerScheme::diana}) {
    if (spec.name == scheme_name(scheme)) {
      return std::make_unique<IntegerCodec>(read_config(spec, scheme), settings);
    }
  }
  throw InvalidArgument("'" + spec.name + "' is not an integer codec; valid: intsgd, "
                        "intsgd-heuristic, intdiana");
}

}  // namespace qccl
