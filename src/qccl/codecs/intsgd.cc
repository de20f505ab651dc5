#include "qccl/codecs/intsgd.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "qccl/codecs/global_norm.h"
#include "qccl/codecs/integer_sum_reduction.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/collectives/fp32_sum.h"
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

constexpr double kStateVersion = 1;

}  // namespace

IntegerCodec::IntegerCodec(IntegerCodecConfig config, CodecSettings settings)
    : Codec(settings), config_(config), scale_(config.beta, config.epsilon) {}

std::string IntegerCodec::spec() const {
  std::string text = std::string(scheme_name(config_.scheme)) +
                     ":round=" + std::string(to_string(config_.rounding)) +
                     ",wire=" + std::string(to_string(config_.wire));
  if (config_.scheme != IntegerScheme::heuristic) {
    text += ",beta=" + format_number(config_.beta) + ",eps=" + format_number(config_.epsilon);
  }
  return text;
}

std::size_t IntegerCodec::wire_bytes(std::size_t count) const {
  return count * wire_bytes_per_element(config_.wire);
}

// The heuristic's α (§5.2): 2^max_exp is the power of two just above the
// largest |x| over all ranks, so |α·x| < (2^(b−1) − 1)/n.
std::vector<double> IntegerCodec::step_scales(double norm, std::size_t length, int ranks) const {
  std::vector<double> scales(blocks_.count());
  if (config_.scheme == IntegerScheme::heuristic) {
    int exponent = 0;
    std::frexp(norm, &exponent);  // norm < 2^exponent
    const double largest = std::ldexp(1.0, wire_bits(config_.wire) - 1) - 1;
    std::fill(scales.begin(), scales.end(), std::ldexp(largest / ranks, -exponent));
    return scales;
  }
  for (std::size_t l = 0; l < scales.size(); ++l) {
    scales[l] = scale_.alpha(l, blocks_.size(l, length), ranks);
  }
  return scales;
}

std::vector<double> IntegerCodec::scales(std::size_t length, int ranks) const {
  if (config_.scheme == IntegerScheme::heuristic || !scale_.ready()) return {};
  return step_scales(0, length, ranks);
}

// The scales enter the name the call check compares, so ranks whose
// optimizer histories differ (and hence their α) fail with a MismatchError
// instead of decoding each other's integers with the wrong scale.
std::string IntegerCodec::reduction_name(std::span<const double> scales) const {
  const std::string_view bytes(reinterpret_cast<const char*>(scales.data()),
                               scales.size() * sizeof(double));
  return spec() + " scales#" + std::to_string(hash62(bytes));
}

// This step's reduction on rank `rank` of `ranks`, with the given scales.
IntegerSumSetup IntegerCodec::reduction_setup(std::vector<double> scales, int ranks,
                                              int rank) const {
  IntegerSumSetup setup;
  setup.name = reduction_name(scales);
  setup.alphas = std::move(scales);
  setup.wire = config_.wire;
  setup.rounding = config_.rounding;
  setup.ranks = ranks;
  setup.clip = per_rank_clip(config_.wire, ranks);
  setup.block_starts = blocks_.starts();
  setup.rng = CounterRng(settings().seed, step(), settings().bucket,
                         static_cast<std::uint64_t>(rank), RngStream::quantize);
  return setup;
}

std::unique_ptr<Reduction> IntegerCodec::reduction_for(double norm, int ranks, int rank,
                                                       Algorithm) const {
  if (config_.scheme != IntegerScheme::heuristic && !scale_.ready()) {
    return std::make_unique<Fp32Sum>();  // the exact first step
  }
  return make_integer_sum_reduction(
      reduction_setup(step_scales(norm, observed_length_, ranks), ranks, rank));
}

// Rounding errs by less than one unit per rank (half a unit when
// deterministic), so the mean by less than 1/α — unless a coordinate was
// clipped, which the adaptive rule cannot rule out for inputs of this norm
// when norm·α > c. IntDIANA's error depends on its shifts: no bound.
double IntegerCodec::max_abs_error(double norm, int ranks, Algorithm) const {
  const double infinite = std::numeric_limits<double>::infinity();
  if (config_.scheme == IntegerScheme::diana) return infinite;
  if (config_.scheme != IntegerScheme::heuristic && !scale_.ready()) {
    return ranks * std::ldexp(norm, -23);  // the exact fp32 step
  }
  const auto scales = step_scales(norm, observed_length_, ranks);
  const double clip = static_cast<double>(per_rank_clip(config_.wire, ranks));
  double bound = 0;
  for (double alpha : scales) {
    if (config_.scheme == IntegerScheme::adaptive && norm * alpha > clip) return infinite;
    bound = std::max(bound, inverse(alpha));
  }
  return bound;
}

// Lemma 1, Eq. (4): E‖Q(x) − x‖² <= Σ_j 1/(4α_j²) per rank; the ranks round
// independently, so the mean's error is Σ_l d_l/(4·n·α_l²). Holds for the
// randomized rounding of the adaptive scheme when nothing is clipped (see
// last_step_stats().clipped); the heuristic clips by design at the edge.
std::optional<double> IntegerCodec::variance_bound(double, std::size_t d, int ranks,
                                                   Algorithm) const {
  if (config_.scheme != IntegerScheme::adaptive || config_.rounding != IntRounding::random ||
      !scale_.ready() || d != observed_length_) {
    return std::nullopt;
  }
  const auto scales = step_scales(0, d, ranks);
  double bound = 0;
  for (std::size_t l = 0; l < scales.size(); ++l) {
    const double inv = inverse(scales[l]);
    bound += static_cast<double>(blocks_.size(l, d)) * inv * inv / (4.0 * ranks);
  }
  return bound;
}

void IntegerCodec::set_blocks(std::span<const std::size_t> sizes) {
  BlockPartition blocks(sizes);
  if (scale_.ready() && blocks.count() != scale_.block_count()) {
    throw InvalidArgument(spec() + ": set_blocks() after the first step must keep the number of "
                          "blocks (" + std::to_string(scale_.block_count()) + ")");
  }
  blocks_ = std::move(blocks);
}

void IntegerCodec::observe_step(double next_step_size, std::span<const float> update) {
  observe(next_step_size, update);
}

void IntegerCodec::observe_step(double next_step_size, std::span<const double> update) {
  observe(next_step_size, update);
}

template <class T>
void IntegerCodec::observe(double next_step_size, std::span<const T> update) {
  if (config_.scheme == IntegerScheme::heuristic) return;
  blocks_.check(update.size(), spec() + " observe_step");
  std::vector<double> squared_norms(blocks_.count(), 0.0);
  for (std::size_t l = 0; l < squared_norms.size(); ++l) {
    const std::size_t first = blocks_.first(l), size = blocks_.size(l, update.size());
    double sum = 0;
    for (std::size_t j = first; j < first + size; ++j) {
      sum += static_cast<double>(update[j]) * static_cast<double>(update[j]);
    }
    squared_norms[l] = sum;
  }
  scale_.observe(next_step_size, squared_norms);
  observed_length_ = update.size();
}

void IntegerCodec::run_allreduce_mean(Communicator& comm, std::span<float> data,
                                      const CollectiveOptions& options) {
  aggregate(comm, data, options);
}

void IntegerCodec::allreduce_mean(Communicator& comm, std::span<double> data,
                                  const CollectiveOptions& options) {
  aggregate(comm, data, options);
  set_step(step() + 1);
}

// The step before any optimizer history is exact (§4.1: "we assume that the
// first communication is exact"); IntDIANA's shifts stay 0 (Algorithm 3,
// line 2).
template <class T>
void IntegerCodec::exact_mean(Communicator& comm, std::span<T> data,
                              const CollectiveOptions& options) {
  const Timeout timeout = comm.timeout(options.timeout);
  if constexpr (std::is_same_v<T, float>) {
    Fp32Sum sum;
    allreduce(comm, data, sum, options);
  } else {
    Fingerprint fingerprint("exact fp64 allreduce");
    fingerprint.add("element count", static_cast<std::int64_t>(data.size()))
        .add_text("codec", spec());
    comm.run(fingerprint, timeout, [&](int) {
      allreduce_values<double>(comm.transport(), data, ReduceOp::sum, timeout);
    });
  }
  const T n = static_cast<T>(comm.size());
  for (T& x : data) x /= n;
}

// One step of Algorithm 1 (adaptive, heuristic) or Algorithm 3 (diana):
// every rank rounds α_l·v_i (v_i = g_i, or g_i − h_i for IntDIANA), the
// integers are summed exactly by the ring or halving-doubling, and each rank decodes
// Σ/(n·α_l). IntDIANA then moves h_i by its own Q(v_i) and h by the decoded
// mean, and returns g = h_old + mean = h_new (lines 8, 12, 14).
template <class T>
void IntegerCodec::aggregate(Communicator& comm, std::span<T> data,
                             const CollectiveOptions& options) {
  const std::string what =
      spec() + " step " + std::to_string(step()) + " bucket " + std::to_string(settings().bucket);
  if (options.algorithm == Algorithm::native) {
    throw InvalidArgument(what + ": runs on algorithm ring or halving-doubling (qccl's collectives sum its "
                          "integers)");
  }
  blocks_.check(data.size(), what);
  const double norm = global_norm(comm, std::span<const T>(data), NormKind::inf, what,
                                  comm.timeout(options.timeout));
  stats_ = CodecStepStats{};
  const bool diana = config_.scheme == IntegerScheme::diana;
  if (config_.scheme != IntegerScheme::heuristic) {
    if (!scale_.ready()) {
      exact_mean(comm, data, options);
      return;
    }
    if (data.size() != observed_length_) {
      throw InvalidArgument(what + ": the last observe_step() update had " +
                            std::to_string(observed_length_) + " elements but the data has " +
                            std::to_string(data.size()) +
                            "; pass the update of exactly the elements this codec reduces");
    }
  } else if (norm == 0.0) {
    std::fill(data.begin(), data.end(), T{0});
    stats_.integer = true;
    return;
  }
  const std::size_t d = data.size();
  const int n = comm.size();
  if (diana && local_shift_.empty()) {
    local_shift_.assign(d, 0.0);
    global_shift_.assign(d, 0.0);
  } else if (diana && local_shift_.size() != d) {
    throw InvalidArgument(what + ": the shifts hold " + std::to_string(local_shift_.size()) +
                          " elements but the data has " + std::to_string(d));
  }

  IntegerSumSetup setup = reduction_setup(step_scales(norm, d, n), n, comm.rank());
  constexpr bool fp64 = std::is_same_v<T, double>;
  const std::size_t wire_bytes = d * wire_bytes_per_element(config_.wire);
  // What the collective encodes: fp32 input is rounded by the vectorised
  // kernel from an fp32 view (for IntDIANA, of g_i − h_i); fp64 input by the
  // exact path from an fp64 source (the view then only receives decode's
  // output, which finish_step overwrites).
  std::span<float> view;
  if (diana) {
    if constexpr (fp64) {
      difference_.resize(d);
      for (std::size_t j = 0; j < d; ++j) difference_[j] = data[j] - local_shift_[j];
      setup.source = difference_;
    }
    fp32_view_.resize(d);
    float* __restrict view_out = fp32_view_.data();
    const double* __restrict shift = local_shift_.data();
    const T* __restrict in = data.data();
    for (std::size_t j = 0; j < d; ++j) {
      view_out[j] = fp64 ? 0.0f : static_cast<float>(static_cast<double>(in[j]) - shift[j]);
    }
    view = fp32_view_;
    local_integers_.resize(wire_bytes);
    setup.local_integers = local_integers_;
  } else if constexpr (fp64) {
    setup.source = data;
    fp32_view_.assign(d, 0.0f);
    view = fp32_view_;
  } else {
    view = data;
  }
  if (diana || fp64) {
    summed_integers_.resize(wire_bytes);
    setup.summed_integers = summed_integers_;
  }
  const std::vector<double> alphas = setup.alphas;
  const auto reduction = make_integer_sum_reduction(std::move(setup));
  allreduce(comm, view, *reduction, options);
  stats_ = CodecStepStats{true, reduction->clipped(), reduction->largest_sent(),
                          reduction->largest_sum()};
  if (!diana && !fp64) return;  // decode wrote Σ/(n·α) already
  switch (config_.wire) {
    case IntWire::int8: finish_step<std::int8_t>(data, alphas, n); break;
    case IntWire::int32: finish_step<std::int32_t>(data, alphas, n); break;
    case IntWire::int64: finish_step<std::int64_t>(data, alphas, n); break;
  }
}

// Decodes the aggregated integers in fp64: the mean Σ/(n·α_l), or for
// IntDIANA h_i += Q_i/α_l, h += mean, result h.
template <class Int, class T>
void IntegerCodec::finish_step(std::span<T> data, std::span<const double> alphas, int ranks) {
  // Plain restrict pointers and one loop per case, so the loops vectorise.
  const Int* __restrict sums = reinterpret_cast<const Int*>(summed_integers_.data());
  const Int* __restrict mine = reinterpret_cast<const Int*>(local_integers_.data());
  double* __restrict local = local_shift_.data();
  double* __restrict global = global_shift_.data();
  T* __restrict out = data.data();
  const bool diana = config_.scheme == IntegerScheme::diana;
  const auto starts = blocks_.starts();
  for (std::size_t l = 0; l < alphas.size(); ++l) {
    const std::size_t first = starts[l], end = first + blocks_.size(l, data.size());
    const double mean_factor = inverse(ranks * alphas[l]), unscale = inverse(alphas[l]);
    if (diana) {
      for (std::size_t j = first; j < end; ++j) {
        local[j] += static_cast<double>(mine[j]) * unscale;
        global[j] += static_cast<double>(sums[j]) * mean_factor;
        out[j] = static_cast<T>(global[j]);
      }
    } else {
      for (std::size_t j = first; j < end; ++j) {
        out[j] = static_cast<T>(static_cast<double>(sums[j]) * mean_factor);
      }
    }
  }
}

template void IntegerCodec::aggregate<float>(Communicator&, std::span<float>, const CollectiveOptions&);
template void IntegerCodec::aggregate<double>(Communicator&, std::span<double>, const CollectiveOptions&);

// [version, scheme, observed length, |scale|, scale…, |shift|, h_i…, h…] as
// fp64 values (lengths below 2^53 are exact).
std::vector<std::byte> IntegerCodec::save_state() const {
  std::vector<double> values{kStateVersion, static_cast<double>(config_.scheme),
                             static_cast<double>(observed_length_)};
  const auto scale = scale_.state();
  values.push_back(static_cast<double>(scale.size()));
  values.insert(values.end(), scale.begin(), scale.end());
  values.push_back(static_cast<double>(local_shift_.size()));
  values.insert(values.end(), local_shift_.begin(), local_shift_.end());
  values.insert(values.end(), global_shift_.begin(), global_shift_.end());
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void IntegerCodec::load_state(std::span<const std::byte> state) {
  const auto corrupt = [&](std::string_view why) {
    return InvalidArgument(spec() + ": cannot load the saved codec state: " + std::string(why) +
                           " (was the checkpoint written with this codec?)");
  };
  if (state.size() % sizeof(double) != 0) throw corrupt("its size is not a whole number of values");
  std::vector<double> values(state.size() / sizeof(double));
  std::memcpy(values.data(), state.data(), state.size());
  std::size_t at = 0;
  const auto next = [&]() {
    if (at >= values.size()) throw corrupt("it is truncated");
    return values[at++];
  };
  if (next() != kStateVersion) throw corrupt("unknown version");
  if (next() != static_cast<double>(config_.scheme)) throw corrupt("it belongs to another scheme");
  const auto length = static_cast<std::size_t>(next());
  const auto scale_size = static_cast<std::size_t>(next());
  if (scale_size > values.size() - at) throw corrupt("it is truncated");
  std::vector<double> scale(values.begin() + static_cast<std::ptrdiff_t>(at),
                            values.begin() + static_cast<std::ptrdiff_t>(at + scale_size));
  at += scale_size;
  const auto shift_size = static_cast<std::size_t>(next());
  if (values.size() - at != 2 * shift_size) throw corrupt("the shifts have the wrong length");
  scale_.restore(scale);
  observed_length_ = length;
  local_shift_.assign(values.begin() + static_cast<std::ptrdiff_t>(at),
                      values.begin() + static_cast<std::ptrdiff_t>(at + shift_size));
  global_shift_.assign(values.begin() + static_cast<std::ptrdiff_t>(at + shift_size), values.end());
}

namespace {

IntegerCodecConfig read_config(const CodecSpec& spec, IntegerScheme scheme) {
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

std::unique_ptr<Codec> make_intsgd_codec(const CodecSpec& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::adaptive), settings);
}
std::unique_ptr<Codec> make_heuristic_intsgd_codec(const CodecSpec& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::heuristic), settings);
}
std::unique_ptr<Codec> make_intdiana_codec(const CodecSpec& spec, CodecSettings settings) {
  return std::make_unique<IntegerCodec>(read_config(spec, IntegerScheme::diana), settings);
}

std::unique_ptr<IntegerCodec> make_integer_codec(std::string_view text, CodecSettings settings) {
  const CodecSpec spec = parse_codec_spec(text);
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
