// Q-GenX's quantizer (Q-GenX Definition 1, §3.2–§3.3, Appendix K): each
// rank normalizes its vector (or each bucket of it) by its own L_q norm and
// rounds every coordinate u = |v_i|/‖v‖_q at random to one of the levels
// 0 = ℓ_0 < ℓ_1 < … < ℓ_{s+1} = 1 so that E[Q(v)] = v; the levels are
// uniform, exponential or fitted (QAda: refitted every `refit` steps to
// minimise the variance of the ranks' vectors, from statistics every rank
// adds up alike); the symbols are sent in fixed width or entropy coded
// (Huffman from the estimated level probabilities, or Elias recursive
// coding). Norms are per rank, so the ranks' encodings are allgathered and
// decoded (Aggregation::allgather_decode), every rank summing the same
// decoded values in rank order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"
#include "qccl/codecs/entropy/entropy_codes.h"
#include "qccl/codecs/quantizers/quantization_levels.h"

namespace qccl {

enum class LevelFamily { uniform, exponential, adaptive };
enum class SymbolCoding { fixed, huffman, elias };

struct QGenXConfig {
  // Bits per coordinate in fixed width: one sign bit and bits − 1 for the
  // level, so 2^(bits−1) levels, s = 2^(bits−1) − 2 of them interior. 2..8.
  int bits = 8;
  LevelFamily levels = LevelFamily::uniform;
  NormOrder norm = kInfinityNorm;
  std::size_t bucket = 1024;  // elements per norm; 0: one norm per vector (Definition 1)
  SymbolCoding coding = SymbolCoding::fixed;
  // Statistics are gathered (one extra exchange) and levels and code
  // refitted at the steps that are multiples of this (QAda's set U), when
  // levels are adaptive or coding is Huffman. Huffman coding without an
  // estimate yet (resumed mid-way without state) codes as Elias does.
  std::uint64_t refit = 100;
};

// What this rank's latest step encoded.
struct QGenXStepReport {
  std::size_t coordinates = 0;
  std::uint64_t bits = 0;          // every bit of its encoding: headers, symbols, signs, padding
  std::uint64_t header_bits = 0;   // chunk modes and norms (C_b per norm) and byte padding
  // Theorem 2 with the step's own symbol frequencies p_j:
  // header_bits + (1 − p_0)·d + (H + 1)·d.
  double bound_bits = 0;
  double entropy = 0;  // H of those frequencies, bits per coordinate
  bool refitted = false;  // levels or code were refitted at this step
};

class QGenXEncoding;

class QGenXCodec final : public Codec {
 public:
  QGenXCodec(QGenXConfig config, CodecSettings settings);
  ~QGenXCodec() override;

  std::string spec() const override;
  CodecTraits traits() const override {
    return {.unbiased = true,
            .aggregation = Aggregation::allgather_decode,
            .granularity = config_.bucket == 0 ? std::size_t{1} : config_.bucket,
            .means_of_decoded_values = true};
  }
  CodecBounds bounds(const BoundsQuery& query) const override;
  std::string spec_for_tensor(std::size_t elements, std::size_t learned_levels_min) const override;
  std::vector<std::byte> save_state() const override;
  void load_state(std::span<const std::byte> state) override;

  const QGenXConfig& config() const { return config_; }
  // The levels in use, ℓ_0 = 0 … ℓ_{s+1} = 1.
  std::span<const double> levels() const;
  // The symbol probabilities estimated at the latest refit (empty before one).
  std::span<const double> estimated_probabilities() const;
  const QGenXStepReport& last_report() const { return report_; }

  // The immutable tables a step quantizes with (levels, lookup, code).
  struct Tables;

 protected:
  // Refits the levels and the code on their steps (a collective of its own
  // before the step's exchange); ranks must quantize with the same levels
  // and code.
  StepPreparation prepare(Communicator& comm, const StepSetup& setup, const Operation& operation,
                          const CollectiveOptions& options) override;
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override;
  void complete_step(const StepSetup& setup, Encoding* encoding,
                     const Operation& operation) override;

 private:
  bool gathers_statistics() const;
  std::size_t encoded_bytes(std::size_t count) const;
  double abs_error(double inf_norm) const;
  // The statistics exchange of a refit step and the new levels and code.
  void refit(Communicator& comm, std::span<const float> input, const CollectiveOptions& options);
  void install(std::vector<double> levels, std::vector<double> probabilities);

  QGenXConfig config_;
  std::shared_ptr<const Tables> tables_;
  std::vector<double> probabilities_;
  QGenXStepReport report_;
  // This step's encoding (from step_encoding until complete_step; null when
  // nothing moved), whose counters the step's report reads.
  QGenXEncoding* encoding_ = nullptr;
  bool refitted_now_ = false;
};

std::unique_ptr<Codec> make_qgenx_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
