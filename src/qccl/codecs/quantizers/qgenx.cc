#include "qccl/codecs/quantizers/qgenx.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/quantizers/level_statistics.h"
#include "qccl/codecs/quantizers/statistics_exchange.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {

struct QGenXCodec::Tables {
  LevelIndex index;                // the levels ℓ_0 … ℓ_{s+1}
  std::optional<PrefixCode> code;  // coding=huffman, once probabilities are estimated
  // A hash of the levels and code lengths: what ranks must share, which
  // joins every step's call check (computed once per refit, not per step).
  std::string digest;
};

namespace {

constexpr int kLongestCodeWord = 24;
enum class ChunkMode : std::uint8_t { fixed = 0, entropy = 1 };

int interior_levels(int bits) { return (1 << (bits - 1)) - 2; }

}  // namespace

// One rank's encoding of a chunk: [mode byte][one fp64 L_q norm per bucket
// (one for the whole vector with bucket=0: C_b = 64 bits)][symbols]. In
// fixed mode each coordinate takes `bits` bits, the signed level in two's
// complement (4-bit pairs packed as kernels::pack_i4 does); in entropy mode
// each takes its level's code word, then a sign bit if the level is not 0
// (Appendix K's order). The entropy coder falls back to fixed width for a
// chunk it would make longer, so no chunk exceeds the fixed size.
class QGenXEncoding final : public Encoding {
 public:
  using Tables = QGenXCodec::Tables;
  QGenXEncoding(std::string name, const QGenXConfig& config,
                 std::shared_ptr<const Tables> tables, CounterRng rng, double whole_norm)
      : name_(std::move(name)), config_(config), tables_(std::move(tables)), rng_(rng),
        whole_norm_(whole_norm), counts_(tables_->index.levels().size(), 0) {}

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return config_.bucket == 0 ? 1 : config_.bucket; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return header_bytes(count) + fixed_payload_bytes(count);
  }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    const std::size_t header = header_bytes(in.size());
    quantize(in, first, out.subspan(1, header - 1));
    const auto payload = out.subspan(header, fixed_payload_bytes(in.size()));
    std::size_t used = 0;
    ChunkMode mode = ChunkMode::fixed;
    if (config_.coding != SymbolCoding::fixed) {
      used = write_entropy(payload);
      if (used != 0) mode = ChunkMode::entropy;
    }
    if (mode == ChunkMode::fixed) used = write_fixed(payload);
    out[0] = static_cast<std::byte>(mode);
    const std::size_t bytes = header + used;
    encoded_bits_ += 8 * bytes;
    header_bits_ += 8 * bytes - symbol_bits_now_;
    coordinates_ += in.size();
    return bytes;
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    const std::size_t header = header_bytes(out.size());
    if (in.size() < header) corrupt("a chunk shorter than its header");
    const auto mode = static_cast<std::uint8_t>(in[0]);
    const auto payload = in.subspan(header);
    if (mode == static_cast<std::uint8_t>(ChunkMode::fixed)) {
      require_chunk_bytes(name_, in.size(), max_encoded_bytes(out.size()), out.size());
      read_fixed(payload, out.size());
    } else if (mode == static_cast<std::uint8_t>(ChunkMode::entropy) &&
               config_.coding != SymbolCoding::fixed) {
      read_entropy(payload, out.size());
    } else {
      corrupt("unknown chunk mode " + std::to_string(mode));
    }
    dequantize(in.subspan(1, header - 1), out);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }

  // This rank's encodings so far, for the step's report.
  std::uint64_t encoded_bits() const { return encoded_bits_; }
  std::uint64_t header_bits() const { return header_bits_; }
  std::size_t coordinates() const { return coordinates_; }
  const std::vector<std::uint64_t>& symbol_counts() const { return counts_; }

 private:
  std::size_t norms(std::size_t count) const {
    return config_.bucket == 0 ? 1 : (count + config_.bucket - 1) / config_.bucket;
  }
  std::size_t header_bytes(std::size_t count) const { return 1 + sizeof(double) * norms(count); }
  std::size_t fixed_payload_bytes(std::size_t count) const {
    return (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
  }
  [[noreturn]] void corrupt(const std::string& why) const {
    throw CommError(name_ + ": " + why + " (corrupt message?)");
  }

  // Definition 1 on each bucket: levels_[i] = ±(level index), the sign of
  // v_i. Uniform levels take the vectorised stochastic rounding of
  // |v_i|·(s+1)/‖v‖_q that QSGD and Global-QSGD use (levels.h); other
  // levels look up u's interval and flip a coin without a branch.
  void quantize(std::span<const float> in, std::size_t first, std::span<std::byte> norms_out) {
    levels_.resize(in.size());
    const std::size_t size = config_.bucket == 0 ? in.size() : config_.bucket;
    for (std::size_t b = 0, start = 0; start < in.size(); ++b, start += size) {
      const auto part = in.subspan(start, std::min(size, in.size() - start));
      const double norm = config_.bucket == 0 ? whole_norm_ : lq_norm(part, config_.norm);
      std::memcpy(norms_out.data() + b * sizeof(double), &norm, sizeof(double));
      if (config_.levels == LevelFamily::uniform) {
        encode_levels(part, first + start, levels_.data() + start, norm, top_level(), rng_);
      } else {
        quantize_to_levels(part, first + start, norm, levels_.data() + start);
      }
    }
    count_levels();
  }

  void quantize_to_levels(std::span<const float> part, std::size_t first, double norm,
                          std::int8_t* out) const {
    const double scale = norm > 0 ? 1.0 / norm : 0.0;
    for (std::size_t i = 0; i < part.size(); ++i) {
      const double u = std::min(1.0, std::fabs(static_cast<double>(part[i])) * scale);
      const auto level = static_cast<int>(tables_->index.round(u, rng_.bits64(first + i) >> 11));
      out[i] = static_cast<std::int8_t>(std::signbit(part[i]) ? -level : level);
    }
  }

  int top_level() const { return static_cast<int>(tables_->index.levels().size()) - 1; }

  // Four interleaved histograms, so equal neighbours do not serialize.
  void count_levels() {
    const std::size_t m = counts_.size();
    std::vector<std::uint64_t>& lanes = lanes_;
    lanes.assign(4 * m, 0);
    const std::size_t n = levels_.size();
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (std::size_t k = 0; k < 4; ++k) ++lanes[k * m + magnitude(levels_[i + k])];
    }
    for (; i < n; ++i) ++lanes[magnitude(levels_[i])];
    for (std::size_t k = 0; k < 4; ++k) {
      for (std::size_t j = 0; j < m; ++j) counts_[j] += lanes[k * m + j];
    }
  }
  static std::size_t magnitude(std::int8_t level) {
    return static_cast<std::size_t>(level < 0 ? -level : level);
  }

  // Fixed width: the signed level in two's complement, `bits` wide.
  std::size_t write_fixed(std::span<std::byte> payload) {
    const int bits = config_.bits;
    symbol_bits_now_ = levels_.size() * static_cast<std::size_t>(bits);
    if (bits == 8) {
      std::memcpy(payload.data(), levels_.data(), levels_.size());
      return levels_.size();
    }
    if (bits == 4) {
      kernels::pack_i4(levels_.data(), reinterpret_cast<std::uint8_t*>(payload.data()), levels_.size());
      return (levels_.size() + 1) / 2;
    }
    BitWriter writer(payload);
    const std::uint32_t mask = (1U << bits) - 1;
    for (std::int8_t level : levels_) writer.put(static_cast<std::uint32_t>(level) & mask, bits);
    return writer.finish();
  }

  // 0 when the entropy code would not be shorter than fixed width.
  std::size_t write_entropy(std::span<std::byte> payload) {
    BitWriter writer(payload);
    for (std::int8_t level : levels_) {
      const auto m = static_cast<std::uint32_t>(magnitude(level));
      const bool fits = tables_->code ? tables_->code->put(writer, m) : put_elias_omega(writer, m + 1);
      if (!fits || (m != 0 && !writer.put(level < 0 ? 1U : 0U, 1))) return 0;
    }
    symbol_bits_now_ = writer.bits();
    return writer.finish();
  }

  void read_fixed(std::span<const std::byte> payload, std::size_t count) {
    levels_.resize(count);
    const int bits = config_.bits;
    if (bits == 8 || bits == 4) {
      if (bits == 8) {
        std::memcpy(levels_.data(), payload.data(), count);
      } else {
        kernels::unpack_i4(reinterpret_cast<const std::uint8_t*>(payload.data()), levels_.data(), count);
      }
      std::size_t largest = 0;
      for (std::int8_t level : levels_) largest = std::max(largest, magnitude(level));
      check_level(largest);
      return;
    }
    BitReader reader(payload, "qgenx");
    for (auto& level : levels_) {
      const std::uint32_t v = reader.get(bits);  // two's complement in `bits` bits
      const int signed_level = static_cast<int>(v) - ((v >> (bits - 1)) != 0 ? (1 << bits) : 0);
      check_level(static_cast<std::size_t>(std::abs(signed_level)));
      level = static_cast<std::int8_t>(signed_level);
    }
  }

  void read_entropy(std::span<const std::byte> payload, std::size_t count) {
    levels_.resize(count);
    BitReader reader(payload, "qgenx");
    for (auto& level : levels_) {
      const std::size_t m = tables_->code ? tables_->code->get(reader)
                                          : static_cast<std::size_t>(get_elias_omega(reader)) - 1;
      check_level(m);
      const bool negative = m != 0 && reader.bit() == 1;
      level = static_cast<std::int8_t>(negative ? -static_cast<int>(m) : static_cast<int>(m));
    }
    if (reader.consumed() != payload.size()) corrupt("bytes after the last coded symbol");
  }

  void check_level(std::size_t level) const {
    if (level >= tables_->index.levels().size()) corrupt("level " + std::to_string(level) + " out of range");
  }

  // Uniform levels: ±j · ‖v‖_q/(s+1) by the vectorised kernel. Others: each
  // bucket's values ‖v‖_q·ℓ_j once, as fp32 bits, the level's sign made the
  // float's.
  void dequantize(std::span<const std::byte> norms_in, std::span<float> out) {
    const std::size_t size = config_.bucket == 0 ? out.size() : config_.bucket;
    const auto levels = tables_->index.levels();
    values_.resize(levels.size());
    for (std::size_t b = 0, start = 0; start < out.size(); ++b, start += size) {
      double norm;
      std::memcpy(&norm, norms_in.data() + b * sizeof(double), sizeof(double));
      if (!std::isfinite(norm) || norm < 0) corrupt("norm " + std::to_string(norm) + " is invalid");
      const std::size_t end = std::min(out.size(), start + size);
      if (config_.levels == LevelFamily::uniform) {
        decode_levels(levels_.data() + start, out.data() + start, end - start, norm / top_level());
        continue;
      }
      for (std::size_t j = 0; j < levels.size(); ++j) {
        values_[j] = std::bit_cast<std::uint32_t>(saturate_to_fp32(norm * levels[j]));
      }
      for (std::size_t i = start; i < end; ++i) {
        const std::int8_t level = levels_[i];
        const std::uint32_t sign = level < 0 ? 0x80000000U : 0U;
        out[i] = std::bit_cast<float>(values_[magnitude(level)] | sign);
      }
    }
  }

  std::string name_;
  QGenXConfig config_;
  std::shared_ptr<const Tables> tables_;
  CounterRng rng_;
  double whole_norm_;
  std::vector<std::int8_t> levels_;    // ± level index per coordinate
  std::vector<std::uint32_t> values_;  // dequantize's table
  std::vector<std::uint64_t> counts_;
  std::vector<std::uint64_t> lanes_;  // count_levels' four histograms, reused
  std::uint64_t encoded_bits_ = 0, header_bits_ = 0, symbol_bits_now_ = 0;
  std::size_t coordinates_ = 0;
};

namespace {

std::vector<double> initial_levels(const QGenXConfig& config) {
  const int s = interior_levels(config.bits);
  return config.levels == LevelFamily::exponential ? exponential_levels(s) : uniform_levels(s);
}

std::string_view family_name(LevelFamily family) {
  switch (family) {
    case LevelFamily::uniform: return "uniform";
    case LevelFamily::exponential: return "exp";
    case LevelFamily::adaptive: return "qada";
  }
  return "?";
}

std::string_view coding_name(SymbolCoding coding) {
  switch (coding) {
    case SymbolCoding::fixed: return "fixed";
    case SymbolCoding::huffman: return "huffman";
    case SymbolCoding::elias: return "elias";
  }
  return "?";
}

}  // namespace

QGenXCodec::QGenXCodec(QGenXConfig config, CodecSettings settings)
    : Codec(settings), config_(config) {
  if (config_.bits < 2 || config_.bits > 8 || config_.refit == 0) {
    throw InvalidArgument("qgenx: bits must be 2..8 and refit at least 1");
  }
  install(initial_levels(config_), {});
}

QGenXCodec::~QGenXCodec() = default;

std::string QGenXCodec::spec() const {
  return "qgenx:bits=" + std::to_string(config_.bits) + ",levels=" +
         std::string(family_name(config_.levels)) + ",norm=" +
         (config_.norm == kInfinityNorm ? std::string("inf") : std::to_string(config_.norm)) +
         ",bucket=" + std::to_string(config_.bucket) + ",coding=" +
         std::string(coding_name(config_.coding)) + ",refit=" + std::to_string(config_.refit);
}

std::string QGenXCodec::spec_for_tensor(std::size_t elements,
                                        std::size_t learned_levels_min) const {
  if (config_.levels != LevelFamily::adaptive || elements >= learned_levels_min) return spec();
  QGenXConfig uniform = config_;
  uniform.levels = LevelFamily::uniform;
  return QGenXCodec(uniform, settings()).spec();
}

std::size_t QGenXCodec::encoded_bytes(std::size_t count) const {
  const std::size_t norms = config_.bucket == 0 ? 1 : (count + config_.bucket - 1) / config_.bucket;
  return 1 + sizeof(double) * norms + (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
}

std::span<const double> QGenXCodec::levels() const { return tables_->index.levels(); }
std::span<const double> QGenXCodec::estimated_probabilities() const { return probabilities_; }

// A coordinate errs by less than its interval, at most the widest gap times
// its bucket's norm, which is at most B^(1/q) times the ∞-norm. QAda's
// levels may change at the next refit, and an interval may then span [0, 1].
double QGenXCodec::abs_error(double inf_norm) const {
  double gap = config_.levels == LevelFamily::adaptive ? 1.0 : 0.0;
  const auto l = levels();
  for (std::size_t j = 0; j + 1 < l.size(); ++j) gap = std::max(gap, l[j + 1] - l[j]);
  if (config_.norm == kInfinityNorm) return gap * inf_norm;
  if (config_.bucket == 0) return std::numeric_limits<double>::infinity();
  return gap * inf_norm * std::pow(static_cast<double>(config_.bucket), 1.0 / config_.norm);
}

// Variance: Theorem 1, ε_Q·Σ_k‖v_k‖² / K² for the mean of K ranks.
CodecBounds QGenXCodec::bounds(const BoundsQuery& q) const {
  const std::size_t size = config_.bucket == 0 ? q.count : std::min(config_.bucket, q.count);
  const double k = static_cast<double>(q.ranks);
  return {encoded_bytes(q.count), abs_error(q.inf_norm),
          theorem1_variance_factor(levels(), std::max<std::size_t>(size, 1), config_.norm) *
              q.squared_norm / (k * k)};
}

bool QGenXCodec::gathers_statistics() const {
  return config_.levels == LevelFamily::adaptive || config_.coding == SymbolCoding::huffman;
}

void QGenXCodec::install(std::vector<double> levels, std::vector<double> probabilities) {
  // Huffman needs estimated probabilities; until a refit has estimated
  // them (a codec resumed at a later step without state), Elias coding
  // stands in (Appendix K's fallback when the distribution is unknown).
  std::optional<PrefixCode> code;
  if (config_.coding == SymbolCoding::huffman && !probabilities.empty()) {
    code = PrefixCode::from_probabilities(probabilities, kLongestCodeWord);
  }
  std::string text;
  for (double l : levels) text += format_number(l) + ",";
  if (code) {
    for (std::uint8_t length : code->lengths()) text += std::to_string(length) + ",";
  }
  tables_ = std::make_shared<const Tables>(
      Tables{LevelIndex(levels), std::move(code), " levels#" + std::to_string(hash62(text))});
  probabilities_ = std::move(probabilities);
}

StepPreparation QGenXCodec::prepare(Communicator& comm, const StepSetup&,
                                    const Operation& operation, const CollectiveOptions& options) {
  refitted_now_ = false;
  if (gathers_statistics() && step() % config_.refit == 0) refit(comm, operation.input, options);
  return {tables_->digest};
}

// QAda (§3.3) and Proposition 2's probabilities from every rank's
// statistics, summed alike on every rank (statistics_exchange.h), so every
// rank fits the same levels and code. If some rank's input is not finite,
// nothing is refitted, and the step's own exchange then reports the input.
void QGenXCodec::refit(Communicator& comm, std::span<const float> input,
                       const CollectiveOptions& options) {
  LevelStatistics local(levels());
  const bool finite = std::all_of(input.begin(), input.end(), [](float x) { return std::isfinite(x); });
  if (finite) local.add(input, config_.bucket, config_.norm);
  const auto total =
      sum_level_statistics(comm, local, finite, spec() + tables_->digest, step(), options);
  if (!total) return;
  std::vector<double> fitted = config_.levels == LevelFamily::adaptive
                                   ? total->fit_levels(levels())
                                   : std::vector<double>(levels().begin(), levels().end());
  auto probabilities = total->symbol_probabilities(fitted);
  install(std::move(fitted), std::move(probabilities));
  refitted_now_ = true;
}

std::unique_ptr<Encoding> QGenXCodec::step_encoding(const StepSetup& setup) {
  encoding_ = nullptr;
  if (setup.norm == 0) return nullptr;
  const double whole = config_.bucket == 0 ? lq_norm(setup.input, config_.norm) : 0.0;
  auto encoding = std::make_unique<QGenXEncoding>(
      spec(), config_, tables_,
      CounterRng(settings().seed, setup.step, settings().bucket,
                 static_cast<std::uint64_t>(setup.rank), RngStream::quantize),
      whole);
  encoding_ = encoding.get();
  return encoding;
}

void QGenXCodec::complete_step(const StepSetup& setup, Encoding*, const Operation&) {
  report_ = {};
  report_.refitted = refitted_now_;
  const QGenXEncoding* mine = std::exchange(encoding_, nullptr);
  if (mine == nullptr) {
    report_.coordinates = setup.input.size();
    return;
  }
  report_.coordinates = mine->coordinates();
  report_.bits = mine->encoded_bits();
  report_.header_bits = mine->header_bits();
  const double d = static_cast<double>(report_.coordinates);
  if (d == 0) return;
  std::vector<double> p;
  for (std::uint64_t c : mine->symbol_counts()) p.push_back(static_cast<double>(c) / d);
  report_.entropy = entropy_bits(p);
  report_.bound_bits = static_cast<double>(report_.header_bits) + (1.0 - p[0]) * d +
                       (report_.entropy + 1.0) * d;
}

std::vector<std::byte> QGenXCodec::save_state() const {
  std::vector<double> values{1.0, static_cast<double>(levels().size())};
  values.insert(values.end(), levels().begin(), levels().end());
  values.push_back(static_cast<double>(probabilities_.size()));
  values.insert(values.end(), probabilities_.begin(), probabilities_.end());
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void QGenXCodec::load_state(std::span<const std::byte> state) {
  if (state.empty()) {
    install(initial_levels(config_), {});
    return;
  }
  const auto corrupt = [&](std::string_view why) {
    return InvalidArgument(spec() + ": cannot load the saved codec state: " + std::string(why) +
                           " (was the checkpoint written with this codec?)");
  };
  if (state.size() % sizeof(double) != 0) throw corrupt("its size is no whole number of values");
  std::vector<double> values(state.size() / sizeof(double));
  std::memcpy(values.data(), state.data(), state.size());
  const std::size_t levels_count = static_cast<std::size_t>(interior_levels(config_.bits)) + 2;
  if (values.size() < 3 || values[0] != 1.0) throw corrupt("unknown version");
  if (values[1] != static_cast<double>(levels_count)) throw corrupt("it has another number of levels");
  if (values.size() < 3 + levels_count) throw corrupt("it is truncated");
  std::vector<double> saved(values.begin() + 2, values.begin() + 2 + static_cast<std::ptrdiff_t>(levels_count));
  const double probability_count = values[2 + levels_count];
  if ((probability_count != 0 && probability_count != static_cast<double>(levels_count)) ||
      values.size() != 3 + levels_count + static_cast<std::size_t>(probability_count)) {
    throw corrupt("its probabilities are truncated or of another length");
  }
  try {
    check_levels(saved);
  } catch (const InvalidArgument& e) {
    throw corrupt(e.what());
  }
  std::vector<double> probabilities(values.begin() + 3 + static_cast<std::ptrdiff_t>(levels_count),
                                    values.end());
  for (double p : probabilities) {
    if (!(p >= 0.0 && p <= 1.0)) throw corrupt("a symbol probability outside [0, 1]");
  }
  install(std::move(saved), std::move(probabilities));
}

std::unique_ptr<Codec> make_qgenx_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  QGenXConfig config;

  config.bits = static_cast<int>(params.whole_number("bits", 2, 8, 8));
  const std::string levels = params.choice("levels", {"uniform", "exp", "qada"}, "uniform");
  config.levels = levels == "uniform" ? LevelFamily::uniform
                  : levels == "exp"   ? LevelFamily::exponential
                                      : LevelFamily::adaptive;
  const std::string norm = params.choice("norm", {"inf", "1", "2", "3", "4", "6", "8"}, "inf");
  config.norm = norm == "inf" ? kInfinityNorm : std::stoi(norm);
  config.bucket = static_cast<std::size_t>(params.whole_number("bucket", 0, 1 << 30, 1024));
  const std::string coding = params.choice("coding", {"fixed", "huffman", "elias"}, "fixed");
  config.coding = coding == "fixed"     ? SymbolCoding::fixed
                  : coding == "huffman" ? SymbolCoding::huffman
                                        : SymbolCoding::elias;
  config.refit = params.whole_number("refit", 1, 1000000000000000ULL, 100);
  params.finish();
  return std::make_unique<QGenXCodec>(config, settings);
}

}  // namespace qccl
