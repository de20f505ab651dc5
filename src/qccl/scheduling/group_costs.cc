#include "qccl/scheduling/group_costs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/statistics.h"
#include "qccl/scheduling/rank_values.h"

namespace qccl {
namespace {

// The bucket id of the measuring codec instance: far above any bucket a
// training run numbers (one per bucket of the model), so its random draws
// never coincide with a training bucket's.
constexpr std::uint64_t kMeasurementBucket = std::uint64_t{1} << 40;
constexpr std::size_t kSmallestDefaultSize = 1024;
constexpr int kDefaultSizeCount = 8;

// 8 sizes from 1 Ki to `largest`, evenly spaced in log, rounded.
std::vector<std::size_t> default_sizes(std::size_t largest) {
  if (largest < 2 * kSmallestDefaultSize) {
    throw InvalidArgument("group costs: largest size " + std::to_string(largest) +
                          " elements leaves no room for two sizes from 1024; use at least 2048");
  }
  std::vector<std::size_t> sizes;
  const double ratio = static_cast<double>(largest) / kSmallestDefaultSize;
  for (int i = 0; i < kDefaultSizeCount; ++i) {
    const double size = kSmallestDefaultSize * std::pow(ratio, i / (kDefaultSizeCount - 1.0));
    const bool last = i + 1 == kDefaultSizeCount;
    sizes.push_back(last ? largest : static_cast<std::size_t>(std::llround(size)));
  }
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<std::size_t> sizes_to_measure(const GroupCostOptions& options, std::size_t largest) {
  if (options.repeats < 1) {
    throw InvalidArgument("group costs: repeats = " + std::to_string(options.repeats) +
                          "; measure each size at least once");
  }
  if (options.sizes.empty()) return default_sizes(largest);
  for (const std::size_t size : options.sizes) {
    if (size == 0) throw InvalidArgument("group costs: a size of 0 elements; give sizes >= 1");
  }
  return options.sizes;
}

// One group measured: its elements and, when laid out as the model's
// tensors, their sizes.
struct MeasuredGroup {
  std::size_t elements = 0;
  std::vector<std::size_t> tensors;  // empty: one unnamed tensor
};

// MergeComp §4.3's h(x_i) and g(x_i) are costs of the groups it merges, so
// the sizes to measure become groups of the model's first tensors (in group
// order), each the fewest tensors holding at least the size, duplicates
// dropped. With fewer
// than two distinct groups (a model of one or two tensors), the sizes are
// measured without a layout.
std::vector<MeasuredGroup> groups_to_measure(const GroupCostOptions& options) {
  const auto& tensors = options.tensor_elements;
  std::size_t total = 0;
  for (const std::size_t t : tensors) total += t;
  const std::vector<std::size_t> sizes =
      sizes_to_measure(options, tensors.empty() ? options.largest : total);
  std::vector<MeasuredGroup> groups;
  for (const std::size_t size : sizes) {
    MeasuredGroup group;
    for (std::size_t t = 0; t < tensors.size() && group.elements < size; ++t) {
      group.tensors.push_back(tensors[t]);
      group.elements += tensors[t];
    }
    const bool repeated = !groups.empty() && groups.back().elements == group.elements;
    if (group.elements > 0 && !repeated) groups.push_back(std::move(group));
  }
  if (groups.size() >= 2) return groups;
  groups.clear();
  for (const std::size_t size : sizes) groups.push_back({size, {}});
  return groups;
}

// Standard normal draws (Box–Muller on two 53-bit uniforms), different on
// every rank and reproducible from the seed.
std::vector<float> synthetic_gradients(std::uint64_t seed, int rank, std::size_t count) {
  const CounterRng rng(seed, 0, kMeasurementBucket, static_cast<std::uint64_t>(rank),
                       RngStream::data);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double u1 = (static_cast<double>(rng.bits64(2 * i) >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(rng.bits64(2 * i + 1) >> 11) * 0x1p-53;
    const double normal = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    values[i] = static_cast<float>(normal);
  }
  return values;
}

// One call's times on this rank, in the order they are exchanged.
constexpr std::size_t kFieldsPerCall = 4;  // codec s, communication s, sent bytes, reduce s

// The measured calls of one size on this rank, appended to `fields`.
void time_calls(Communicator& comm, Codec& codec, std::span<const float> gradients,
                std::vector<float>& buffer, const GroupCostOptions& options,
                std::vector<double>& fields) {
  for (int call = 0; call <= options.repeats; ++call) {  // call 0 warms up
    std::copy(gradients.begin(), gradients.end(), buffer.begin());
    PhaseTimes phases;
    CollectiveOptions collective = options.collective;
    collective.phases = &phases;
    const std::uint64_t sent_before = comm.data_bytes_sent();
    const auto start = Clock::now();
    codec.allreduce_mean(comm, std::span<float>(buffer.data(), gradients.size()), collective);
    const double seconds = seconds_since(start);
    if (call == 0) continue;
    const double codec_seconds = phases.encode + phases.decode;
    fields.push_back(codec_seconds);
    fields.push_back(std::max(0.0, seconds - codec_seconds));
    fields.push_back(static_cast<double>(comm.data_bytes_sent() - sent_before));
    fields.push_back(phases.reduce);
  }
}

// Per call the slowest rank's value of each field (a collective ends when
// its slowest rank does), then the median over the repeats.
std::vector<GroupCostSample> samples_of(const std::vector<double>& all, int ranks,
                                        const std::vector<MeasuredGroup>& sizes, int repeats) {
  const std::size_t per_rank = all.size() / static_cast<std::size_t>(ranks);
  std::vector<GroupCostSample> samples;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    std::vector<double> medians;
    for (std::size_t field = 0; field < kFieldsPerCall; ++field) {
      std::vector<double> slowest;
      for (int call = 0; call < repeats; ++call) {
        const std::size_t at = (s * repeats + call) * kFieldsPerCall + field;
        double value = 0;
        for (int r = 0; r < ranks; ++r) value = std::max(value, all[r * per_rank + at]);
        slowest.push_back(value);
      }
      medians.push_back(median(std::move(slowest)));
    }
    samples.push_back({sizes[s].elements, medians[0], medians[1], medians[2], medians[3]});
  }
  return samples;
}

}  // namespace

// MergeComp §4.3 needs h and g of Assumption 5; measured here as the run
// will see them: its codec, its communicator, its collective options, its
// groups' layouts.
GroupCostMeasurement measure_group_costs(Communicator& comm, const GroupCostOptions& options) {
  const std::vector<MeasuredGroup> groups = groups_to_measure(options);
  make_codec(options.codec);  // a bad spec fails before any call
  std::size_t largest = 0;
  for (const MeasuredGroup& g : groups) largest = std::max(largest, g.elements);
  const std::vector<float> gradients = synthetic_gradients(options.seed, comm.rank(), largest);
  std::vector<float> buffer(largest);
  std::vector<double> fields;
  for (const MeasuredGroup& group : groups) {
    // A fresh instance per size: per-tensor state (error feedback's
    // residual) has the size of the vector it was made for.
    const std::unique_ptr<Codec> codec =
        make_codec(options.codec, CodecSettings{options.seed, kMeasurementBucket});
    if (!group.tensors.empty()) codec->set_layout(TensorLayout::of_sizes(group.tensors));
    time_calls(comm, *codec, std::span(gradients).first(group.elements), buffer, options, fields);
  }
  const std::vector<double> all = gather_over_ranks(comm, fields, options.collective);
  return fit_group_costs(samples_of(all, comm.size(), groups, options.repeats),
                         options.collective.algorithm, comm.size());
}

namespace {

void validate_samples(const std::vector<GroupCostSample>& samples, int ranks) {
  if (samples.size() < 2) {
    throw InvalidArgument("fitting group costs needs at least two sizes, got " +
                          std::to_string(samples.size()));
  }
  if (ranks < 1) throw InvalidArgument("fitting group costs: ranks must be >= 1");
  for (const auto& s : samples) {
    const bool valid = s.elements > 0 && std::isfinite(s.codec_seconds) && s.codec_seconds >= 0 &&
                       std::isfinite(s.communication_seconds) && s.communication_seconds >= 0 &&
                       std::isfinite(s.sent_bytes) && s.sent_bytes >= 0 &&
                       std::isfinite(s.reduce_seconds) && s.reduce_seconds >= 0 &&
                       s.reduce_seconds <= s.communication_seconds;
    if (!valid) {
      throw InvalidArgument("fitting group costs: the sample of " + std::to_string(s.elements) +
                            " elements has a size of 0, a negative or non-finite time or "
                            "byte count, or more reduction time than communication time; "
                            "measure again");
    }
  }
}

// t(x) = B + γ·x of one field of the samples (h: the codec's seconds; g's
// CPU part: the reductions') by least squares on relative error (weights
// 1/t², as fit_alpha_beta), with B, γ >= 0: if the free fit has a negative
// coefficient, the constrained optimum lies on a boundary, so the better of
// the two one-coefficient fits is taken. A time of 0 (below the clock's
// resolution) is weighted as the smallest positive one; all 0: t = 0.
LinearCost fit_linear_cost(const std::vector<GroupCostSample>& samples,
                           double GroupCostSample::*field) {
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& s : samples) {
    if (s.*field > 0) smallest = std::min(smallest, s.*field);
  }
  if (!std::isfinite(smallest)) return {};
  double w = 0, wx = 0, wxx = 0, wh = 0, wxh = 0;
  for (const auto& s : samples) {
    const double h = s.*field, x = static_cast<double>(s.elements);
    const double weight = 1 / std::pow(std::max(h, smallest), 2);
    w += weight, wx += weight * x, wxx += weight * x * x, wh += weight * h, wxh += weight * x * h;
  }
  const double det = w * wxx - wx * wx;
  if (det > 0) {
    const LinearCost free{(wh * wxx - wx * wxh) / det, (w * wxh - wx * wh) / det};
    if (free.fixed >= 0 && free.per_element >= 0) return free;
  }
  const LinearCost fixed_only{wh / w, 0}, per_element_only{0, wxh / wxx};
  const auto residual = [&](const LinearCost& cost) {
    double sum = 0;
    for (const auto& s : samples) {
      const double error = cost(static_cast<double>(s.elements)) - s.*field;
      sum += error * error / std::pow(std::max(s.*field, smallest), 2);
    }
    return sum;
  };
  return residual(fixed_only) <= residual(per_element_only) ? fixed_only : per_element_only;
}

// Slope of sent bytes against elements, by ordinary least squares.
double sent_bytes_per_element(const std::vector<GroupCostSample>& samples) {
  double mean_x = 0, mean_y = 0;
  for (const auto& s : samples) mean_x += static_cast<double>(s.elements), mean_y += s.sent_bytes;
  mean_x /= static_cast<double>(samples.size());
  mean_y /= static_cast<double>(samples.size());
  double sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    const double dx = static_cast<double>(s.elements) - mean_x;
    sxx += dx * dx, sxy += dx * (s.sent_bytes - mean_y);
  }
  if (sxx == 0) {
    throw InvalidArgument("fitting group costs: every sample has the same size; measure at least "
                          "two different sizes");
  }
  return sxy / sxx;
}

// α and β of the transfers by fit_alpha_beta on the algorithm's terms with
// the sent bytes measured, on the communication time less the reductions'
// (γ = δ = 0: the codec's time is h, the reductions' g's CPU part);
// β = ∞ when the times show no bandwidth at all.
ModelParams fit_network(const std::vector<GroupCostSample>& samples, Algorithm algorithm,
                        int ranks) {
  std::vector<ModelSample> model_samples;
  for (const auto& s : samples) {
    const double link_seconds = s.communication_seconds - s.reduce_seconds;
    if (!(link_seconds > 0)) {
      throw InvalidArgument("fitting group costs: the sample of " + std::to_string(s.elements) +
                            " elements sent bytes in no measurable time; measure larger sizes");
    }
    const double bytes = static_cast<double>(s.elements) * sizeof(float);
    model_samples.push_back(
        {model_terms_measured(algorithm, ranks, bytes, s.sent_bytes), link_seconds});
  }
  try {
    return fit_alpha_beta(model_samples, 0, 0);
  } catch (const InvalidArgument&) {
    // The times do not grow with the bytes (every size within a shaped
    // link's burst, or a loaded machine's noise): the transfers cost a
    // latency only, α the mean time per step (weights 1/t², as above).
    double weights = 0, weighted_alpha = 0;
    for (const auto& s : model_samples) {
      const double weight = 1 / (s.seconds * s.seconds);
      weights += weight;
      weighted_alpha += weight * s.seconds / s.terms.steps;
    }
    return {weighted_alpha / weights, std::numeric_limits<double>::infinity(), 0, 0};
  }
}

}  // namespace

// Assumption 5's h and g from measurements; g's link part through the α-β
// model of perf_model.h (Global-QSGD §7) plus its CPU part, the reductions:
//   B_g = steps·α + B_r,   γ_g = wire bytes per element / β + γ_r.
// A link rate replaces β only: γ_r, per element on this machine's CPU,
// stays whatever the network.
GroupCostMeasurement fit_group_costs(std::vector<GroupCostSample> samples, Algorithm algorithm,
                                     int ranks, std::optional<double> link_bytes_per_second) {
  validate_samples(samples, ranks);
  const auto link = link_bytes_per_second;
  if (link && !(std::isfinite(*link) && *link > 0)) {
    throw InvalidArgument("fitting group costs: link rate " + std::to_string(*link) +
                          " bytes/s; give a finite rate > 0");
  }
  GroupCostMeasurement m;
  m.samples = std::move(samples);
  m.costs.codec = fit_linear_cost(m.samples, &GroupCostSample::codec_seconds);
  m.wire_bytes_per_element = std::max(0.0, sent_bytes_per_element(m.samples));
  if (ranks == 1) {  // nothing crosses a link or is reduced: g = 0, an infinitely fast network
    m.network = {0, link.value_or(std::numeric_limits<double>::infinity()), 0, 0};
    m.wire_bytes_per_element = 0;
    return m;
  }
  m.reduction = fit_linear_cost(m.samples, &GroupCostSample::reduce_seconds);
  if (m.wire_bytes_per_element == 0) {
    throw InvalidArgument("fitting group costs: the sent bytes do not grow with the size on " +
                          std::to_string(ranks) + " ranks (the transport counted none?); "
                          "measure with the ring or halving-doubling algorithm");
  }
  m.network = fit_network(m.samples, algorithm, ranks);
  if (link) m.network.beta = *link;
  const double steps = model_terms_measured(algorithm, ranks, 0, 0).steps;
  m.costs.communication = {steps * m.network.alpha + m.reduction.fixed,
                           m.wire_bytes_per_element / m.network.beta + m.reduction.per_element};
  return m;
}

}  // namespace qccl
