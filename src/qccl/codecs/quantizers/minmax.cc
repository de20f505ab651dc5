#include "qccl/codecs/quantizers/minmax.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/codecs/quantizers/levels_sgd.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/packed_indices.h"
#include "qccl/codecs/quantizers/quantization_levels.h"
#include "qccl/codecs/quantizers/statistics_exchange.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {

struct MinMaxCodec::Tables {
  LevelIndex index;  // the 2^bits levels on [0, 1]
  // A hash of learned levels (empty for uniform ones): what ranks must
  // share, which joins every step's call check (computed once per refit).
  std::string digest;
};

namespace {

constexpr std::size_t kStatisticsCells = 4096;  // even cells of [0, 1] for learned levels

std::size_t level_count(int bits) { return std::size_t{1} << bits; }

// (min, max) of finite values, as fp32 (they are values).
std::pair<float, float> value_range(std::span<const float> v) {
  if (v.empty()) return {0.0f, 0.0f};
  const auto range = kernels::value_range(v.data(), v.size());
  return {range.lo, range.hi};
}

// The learned levels moved as the random-shift lattice moves (QSDP §4.1
// Definition 1 with uneven levels): ℓ_k + ρ·(ℓ_{k+1} − ℓ_k) for ρ >= 0,
// ℓ_k + ρ·(ℓ_k − ℓ_{k−1}) for ρ < 0, the gaps beyond the ends repeating
// the end gaps. Evenly spaced levels give (k + ρ)/(2^bits − 1), the
// lattice itself. The result increases strictly, and its ends lie within
// half an end gap of 0 and 1, so the nearest of them covers [0, 1].
std::vector<double> shifted_levels(std::span<const double> levels, double shift) {
  const std::size_t top = levels.size() - 1;
  std::vector<double> out(levels.size());
  for (std::size_t k = 0; k <= top; ++k) {
    const double gap = shift >= 0 ? (k < top ? levels[k + 1] - levels[k] : levels[top] - levels[top - 1])
                                  : (k > 0 ? levels[k] - levels[k - 1] : levels[1] - levels[0]);
    out[k] = levels[k] + shift * gap;
  }
  return out;
}

// One rank's encoding of a chunk: [fp32 min, fp32 max] per bucket, then the
// level indices, `bits` bits each (bytes for 8, nibble pairs for 4).
class MinMaxEncoding final : public Encoding {
 public:
  using Tables = MinMaxCodec::Tables;
  // `whole`: the range of the `length` encoded elements (bucket=0 on host data).
  MinMaxEncoding(std::string name, const MinMaxConfig& config, std::shared_ptr<const Tables> tables,
                  CounterRng rng, double shift, std::pair<float, float> whole, std::size_t length)
      : name_(std::move(name)), config_(config), tables_(std::move(tables)), rng_(rng),
        shift_(shift), whole_(whole), length_(length) {
    if (config_.learned && config_.rounding == MinMaxRounding::shift) {
      shifted_ = shifted_levels(tables_->index.levels(), shift_);
    }
  }

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return config_.bucket == 0 ? 1 : config_.bucket; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return 2 * sizeof(float) * buckets(count) + payload_bytes(count);
  }

  // 8-bit indices are the payload's bytes themselves: quantized into the
  // message and decoded from it, without a copy.
  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    auto* payload = out.data() + 2 * sizeof(float) * buckets(in.size());
    std::uint8_t* indices = reinterpret_cast<std::uint8_t*>(payload);
    if (config_.bits != 8) {
      indices_.resize(in.size());
      indices = indices_.data();
    }
    const std::size_t size = config_.bucket == 0 ? in.size() : config_.bucket;
    for (std::size_t b = 0, start = 0; start < in.size(); ++b, start += size) {
      const auto part = in.subspan(start, std::min(size, in.size() - start));
      const auto [lo, hi] = config_.bucket == 0 ? whole_ : value_range(part);
      std::memcpy(out.data() + 2 * sizeof(float) * b, &lo, sizeof(float));
      std::memcpy(out.data() + 2 * sizeof(float) * b + sizeof(float), &hi, sizeof(float));
      quantize(part, first + start, lo, hi, indices + start);
    }
    if (config_.bits != 8) pack_indices(indices_, config_.bits, payload);
    return max_encoded_bytes(in.size());
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    decode_buckets<false>(in, out);
  }
  // Evenly spaced levels: each value's index and decoded value follow
  // from its bucket's range, the shared shift and its own counter. One
  // range per vector (bucket=0) is one bucket of the step's whole encoded
  // vector, whose chunks the collective cuts anywhere (granularity 1:
  // GatheredStaging takes them apart). The device step sets the result's
  // ranks and division.
  std::optional<ElementForm> element_form() const override {
    if (config_.learned) return std::nullopt;
    ElementForm form;
    form.code = ElementForm::Code::minmax_gathered;
    form.levels = static_cast<std::int32_t>(tables_->index.levels().size() - 1);
    form.values_per_range = config_.bucket == 0 ? std::max<std::size_t>(length_, 1) : config_.bucket;
    form.code_bits = config_.bits;
    form.lattice = config_.rounding != MinMaxRounding::stochastic;
    form.lattice_offset = config_.rounding == MinMaxRounding::shift ? 0.5 - shift_ : 0.5 + shift_;
    form.shift = config_.rounding == MinMaxRounding::shift ? shift_ : 0.0;
    form.key_low = rng_.key_low();
    form.key_high = rng_.key_high();
    form.ranks = 1;
    return form;
  }
  // The reduce-scatter and allreduce add every rank's decoding: fused here.
  void decode_add(std::span<const std::byte> in, std::size_t, std::span<float> out,
                  std::span<float>) override {
    decode_buckets<true>(in, out);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }

 private:
  std::size_t buckets(std::size_t count) const {
    return config_.bucket == 0 ? 1 : (count + config_.bucket - 1) / config_.bucket;
  }

  // Each bucket's values lo + range·level of its indices (on the shifted
  // lattice from lo + δ·ρ), written to `out` or, with kAdd, added to it.
  template <bool kAdd>
  void decode_buckets(std::span<const std::byte> in, std::span<float> out) {
    require_chunk_bytes(name_, in.size(), max_encoded_bytes(out.size()), out.size());
    const auto* payload = in.data() + 2 * sizeof(float) * buckets(out.size());
    const std::uint8_t* indices = reinterpret_cast<const std::uint8_t*>(payload);
    if (config_.bits != 8) {
      indices_.resize(out.size());
      unpack_indices(payload, config_.bits, indices_);
      indices = indices_.data();
    }
    const std::size_t size = config_.bucket == 0 ? out.size() : config_.bucket;
    const auto levels = shifted_.empty() ? tables_->index.levels() : std::span<const double>(shifted_);
    for (std::size_t b = 0, start = 0; start < out.size(); ++b, start += size) {
      float lo, hi;
      std::memcpy(&lo, in.data() + 2 * sizeof(float) * b, sizeof(float));
      std::memcpy(&hi, in.data() + 2 * sizeof(float) * b + sizeof(float), sizeof(float));
      if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
        throw CommError(name_ + ": bucket range [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "] is invalid (corrupt message?)");
      }
      const std::size_t end = std::min(out.size(), start + size);
      const double range = static_cast<double>(hi) - lo;
      if (config_.learned || range == 0) {  // lo + range·level (constant buckets: lo)
        for (std::size_t i = start; i < end; ++i) {
          const float value = saturate_to_fp32(lo + range * levels[indices[i]]);
          out[i] = kAdd ? out[i] + value : value;
        }
        continue;
      }
      // Evenly spaced: lo + δ·k, the shifted lattice's from lo + δ·ρ.
      const double step = range / static_cast<double>(levels.size() - 1);
      const double base = config_.rounding == MinMaxRounding::shift ? lo + step * shift_ : lo;
      if constexpr (kAdd) {
        kernels::affine_decode_add_u8(indices + start, out.data() + start, end - start, base, step);
      } else {
        kernels::affine_decode_u8(indices + start, out.data() + start, end - start, base, step);
      }
    }
  }
  std::size_t payload_bytes(std::size_t count) const {
    return (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
  }

  // A bucket's level indices. A constant bucket (and only that: lo is the
  // bucket's minimum) is all index 0. Evenly spaced levels take the
  // vectorised kernels, in double; with the shared draw ρ ~ U[−½, ½):
  // - stochastic: up from ⌊(x − min)/δ⌋ with probability its fraction;
  // - Q^w_δ (Definition 1, nearest rounding): k = nearest((x − min)/δ − ρ),
  //   the value min + δ·(k + ρ); the lattice's ends lie within δ/2 of min
  //   and max, so k stays in 0..2^bits − 1 (clamped against a tie at
  //   ρ = −½ exactly);
  // - the dither on the fixed grid: k = ⌊(x − min)/δ + ρ + ½⌋, the value
  //   min + δ·k, in 0..2^bits − 1 since (x − min)/δ <= 2^bits − 1 and
  //   ρ + ½ < 1.
  // Learned levels take the scalar path on u = (x − min)/(max − min):
  // LevelIndex::round, unbiased random rounding between the two levels
  // around u; or with rounding=shift the nearest of the shifted levels.
  void quantize(std::span<const float> part, std::size_t first, float lo, float hi,
                std::uint8_t* out) const {
    if (hi <= lo) {
      std::fill(out, out + part.size(), std::uint8_t{0});
      return;
    }
    const double range = static_cast<double>(hi) - lo;
    if (!shifted_.empty()) {
      const double scale = 1.0 / range;
      for (std::size_t i = 0; i < part.size(); ++i) {
        out[i] = static_cast<std::uint8_t>(closest_level(shifted_, (static_cast<double>(part[i]) - lo) * scale));
      }
      return;
    }
    if (config_.learned) {
      const double scale = 1.0 / range;
      for (std::size_t i = 0; i < part.size(); ++i) {
        const double u = std::clamp((static_cast<double>(part[i]) - lo) * scale, 0.0, 1.0);
        out[i] = static_cast<std::uint8_t>(tables_->index.round(u, rng_.bits64(first + i) >> 11));
      }
      return;
    }
    const auto top = static_cast<std::int32_t>(tables_->index.levels().size() - 1);
    const double inverse = static_cast<double>(top) / range;
    if (config_.rounding == MinMaxRounding::stochastic) {
      kernels::minmax_encode_u8(part.data(), out, part.size(), lo, inverse, top, rng_.key_low(),
                                rng_.key_high(), first);
    } else {
      const double offset = config_.rounding == MinMaxRounding::shift ? 0.5 - shift_ : 0.5 + shift_;
      kernels::lattice_encode_u8(part.data(), out, part.size(), lo, inverse, offset, top);
    }
  }

  std::string name_;
  MinMaxConfig config_;
  std::shared_ptr<const Tables> tables_;
  CounterRng rng_;
  double shift_;
  std::pair<float, float> whole_;
  std::size_t length_;
  std::vector<double> shifted_;  // learned levels on the shifted lattice (rounding=shift)
  std::vector<std::uint8_t> indices_;
};

double widest_gap(std::span<const double> levels) {
  double gap = 0;
  for (std::size_t j = 0; j + 1 < levels.size(); ++j) gap = std::max(gap, levels[j + 1] - levels[j]);
  return gap;
}

}  // namespace

MinMaxCodec::MinMaxCodec(MinMaxConfig config, CodecSettings settings)
    : Codec(settings), config_(config) {
  if (config_.bits < 2 || config_.bits > 8 || config_.refit == 0) {
    throw InvalidArgument("minmax: bits must be 2..8 and refit at least 1");
  }
  if (config_.learned && config_.rounding == MinMaxRounding::dither) {
    throw InvalidArgument("minmax: rounding=dither dithers on the evenly spaced grid, so it cannot "
                          "use learned levels; use rounding=stochastic or rounding=shift with "
                          "levels=learned");
  }
  install(uniform_levels(static_cast<int>(level_count(config_.bits)) - 2));
}

MinMaxCodec::~MinMaxCodec() = default;

std::string MinMaxCodec::spec() const {
  return "minmax:bits=" + std::to_string(config_.bits) + ",bucket=" + std::to_string(config_.bucket) +
         ",rounding=" +
         (config_.rounding == MinMaxRounding::shift    ? "shift"
          : config_.rounding == MinMaxRounding::dither ? "dither"
                                                       : "stochastic") +
         ",levels=" + (config_.learned ? "learned" : "uniform") +
         (config_.learned ? ",refit=" + std::to_string(config_.refit) : "") +
         (config_.learned && config_.fit == LevelsFit::sgd ? ",fit=sgd" : "") +
         (config_.learned && config_.schedule == RefitSchedule::paper ? ",schedule=paper" : "");
}

std::string MinMaxCodec::spec_for_tensor(std::size_t elements,
                                         std::size_t learned_levels_min) const {
  if (!config_.learned || elements >= learned_levels_min) return spec();
  MinMaxConfig uniform = config_;
  uniform.learned = false;
  return MinMaxCodec(uniform, settings()).spec();
}

std::size_t MinMaxCodec::encoded_bytes(std::size_t count) const {
  const std::size_t buckets = config_.bucket == 0 ? 1 : (count + config_.bucket - 1) / config_.bucket;
  return 2 * sizeof(float) * buckets + (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
}

std::span<const double> MinMaxCodec::levels() const { return tables_->index.levels(); }

// Error: a value errs by less than one interval of its bucket's range, at
// most 2·‖v‖_∞ wide; on the shifted lattice by at most δ/2. Learned levels
// may change at the next refit, and an interval may then span the whole
// range. Variance: per bucket of B values, (max − min)² ≤ 4‖v_b‖², so
// Lemma 5 and the rounding's (b − u)(u − a) ≤ gap²/4 give B·gap²·‖v_b‖²
// with gap the widest level interval (1/(2^bits − 1) for uniform levels);
// the mean of K ranks divides by K².
CodecBounds MinMaxCodec::bounds(const BoundsQuery& q) const {
  const double gap = config_.learned ? 1.0 : widest_gap(levels());
  const double error = config_.rounding == MinMaxRounding::shift ? q.inf_norm * gap
                                                                 : 2 * q.inf_norm * gap;
  const double b =
      static_cast<double>(config_.bucket == 0 ? q.count : std::min(config_.bucket, q.count));
  const double k = static_cast<double>(q.ranks);
  return {encoded_bytes(q.count), error, b * gap * gap * q.squared_norm / (k * k)};
}

void MinMaxCodec::install(std::vector<double> levels) {
  std::string digest;
  if (config_.learned) {
    std::string text;
    for (double l : levels) text += format_number(l) + ",";
    digest = " levels#" + std::to_string(hash62(text));
  }
  tables_ = std::make_shared<const Tables>(Tables{LevelIndex(levels), std::move(digest)});
}

bool is_refit_step(const MinMaxConfig& config, std::uint64_t step) {
  if (!config.learned) return false;
  if (config.schedule == RefitSchedule::paper) {
    const auto at = [&](double times) { return static_cast<std::uint64_t>(std::llround(times * static_cast<double>(config.refit))); };
    return step == config.refit || step == at(1900.0 / 400) || step == at(3800.0 / 400);
  }
  if (step < config.refit || step % config.refit != 0) return false;
  return std::has_single_bit(step / config.refit);
}

StepPreparation MinMaxCodec::prepare(Communicator& comm, const StepSetup&,
                                     const Operation& operation, const CollectiveOptions& options) {
  refitted_ = false;
  if (is_refit_step(config_, step()) && fitted_at_ != step()) refit(comm, operation.input, options);
  return {tables_->digest};
}

// §5.2's learned levels from every rank's values: each value's position
// u in its bucket's [min, max], weighted by (max − min)², the variance it
// causes per unit of σ²(u); every rank fits from the same sums.
void MinMaxCodec::refit(Communicator& comm, std::span<const float> input,
                        const CollectiveOptions& options) {
  LevelStatistics local(levels(), kStatisticsCells);
  const bool finite = std::all_of(input.begin(), input.end(), [](float x) { return std::isfinite(x); });
  if (finite) {
    const std::size_t size = config_.bucket == 0 ? std::max<std::size_t>(input.size(), 1) : config_.bucket;
    for (std::size_t start = 0; start < input.size(); start += size) {
      const auto part = input.subspan(start, std::min(size, input.size() - start));
      const auto [lo, hi] = value_range(part);
      const double range = static_cast<double>(hi) - lo;
      for (float x : part) {
        local.add_coordinate(range > 0 ? std::clamp((x - static_cast<double>(lo)) / range, 0.0, 1.0) : 0.0,
                             range * range);
      }
    }
  }
  const auto total = sum_level_statistics(comm, local, finite, spec() + tables_->digest, step(), options);
  if (!total) return;
  if (config_.fit == LevelsFit::sgd) {
    const CounterRng shared(settings().seed, step(), settings().bucket, 0, RngStream::shared);
    install(learn_levels_sgd(*total, levels(), shared));
  } else {
    install(total->fit_levels(levels()));
  }
  refitted_ = true;
  fitted_at_ = step();
}

std::unique_ptr<Encoding> MinMaxCodec::step_encoding(const StepSetup& setup) {
  if (setup.norm == 0) return nullptr;
  // One shift per vector per step, the same on every rank (the shared
  // stream, no rank in the key): never sent, each decoder derives it.
  const CounterRng shared(settings().seed, setup.step, settings().bucket, 0, RngStream::shared);
  const double shift = static_cast<double>(shared.bits64(0) >> 11) * 0x1p-53 - 0.5;
  return std::make_unique<MinMaxEncoding>(
      spec(), config_, tables_,
      CounterRng(settings().seed, setup.step, settings().bucket,
                 static_cast<std::uint64_t>(setup.rank), RngStream::quantize),
      shift, config_.bucket == 0 ? value_range(setup.input) : std::pair<float, float>{0.0f, 0.0f},
      setup.input_length);
}

std::vector<std::byte> MinMaxCodec::save_state() const {
  if (!config_.learned) return {};
  std::vector<double> values{1.0, static_cast<double>(levels().size())};
  values.insert(values.end(), levels().begin(), levels().end());
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void MinMaxCodec::load_state(std::span<const std::byte> state) {
  fitted_at_.reset();
  const auto corrupt = [&](std::string_view why) {
    return InvalidArgument(spec() + ": cannot load the saved codec state: " + std::string(why) +
                           " (was the checkpoint written with this codec?)");
  };
  if (state.empty()) {
    install(uniform_levels(static_cast<int>(level_count(config_.bits)) - 2));
    return;
  }
  if (!config_.learned) throw corrupt("uniform levels keep no state");
  const std::size_t count = level_count(config_.bits);
  if (state.size() != (2 + count) * sizeof(double)) throw corrupt("its size is not this codec's");
  std::vector<double> values(2 + count);
  std::memcpy(values.data(), state.data(), state.size());
  if (values[0] != 1.0 || values[1] != static_cast<double>(count)) throw corrupt("unknown version");
  std::vector<double> saved(values.begin() + 2, values.end());
  try {
    check_levels(saved);
  } catch (const InvalidArgument& e) {
    throw corrupt(e.what());
  }
  install(std::move(saved));
}

std::unique_ptr<Codec> make_minmax_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);

  MinMaxConfig config;
  config.bits = static_cast<int>(params.whole_number("bits", 2, 8, 8));
  config.bucket = static_cast<std::size_t>(params.whole_number("bucket", 0, 1 << 30, 1024));
  const std::string rounding = params.choice("rounding", {"stochastic", "shift", "dither"}, "stochastic");
  config.rounding = rounding == "shift"    ? MinMaxRounding::shift
                    : rounding == "dither" ? MinMaxRounding::dither
                                           : MinMaxRounding::stochastic;
  config.learned = params.choice("levels", {"uniform", "learned"}, "uniform") == "learned";
  config.refit = params.whole_number("refit", 1, 1000000000000000ULL, 400);
  config.fit = params.choice("fit", {"descent", "sgd"}, "descent") == "sgd" ? LevelsFit::sgd : LevelsFit::descent;
  config.schedule = params.choice("schedule", {"doubling", "paper"}, "doubling") == "paper"
                        ? RefitSchedule::paper
                        : RefitSchedule::doubling;
  params.finish();
  return std::make_unique<MinMaxCodec>(config, settings);
}

}  // namespace qccl
