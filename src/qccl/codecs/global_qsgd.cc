#include "qccl/codecs/global_qsgd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/codecs/exp_dither.h"
#include "qccl/codecs/exp_dither_reduction.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/linear_dither.h"
#include "qccl/collectives/allgather.h"
#include "qccl/common/errors.h"

namespace qccl {

namespace {

class GlobalQsgdCodec final : public Codec {
 public:
  GlobalQsgdCodec(GlobalQsgdConfig config, CodecSettings settings)
      : Codec(settings), config_(config) {}

  std::string spec() const override {
    return "global-qsgd:bits=" + std::to_string(config_.bits) +
           ",dither=" + (config_.dither == Dither::linear ? "linear" : "exp") +
           ",norm=" + std::string(to_string(config_.norm)) +
           ",sparse=" + (config_.sparse ? "auto" : "off");
  }
  bool unbiased() const override { return true; }
  Aggregation aggregation() const override { return Aggregation::compressed_domain; }
  // Payload only; averaging chunks add a 4-byte header per pipelined chunk.
  std::size_t wire_bytes(std::size_t count) const override {
    return (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
  }
  NormKind norm_kind() const override { return config_.norm; }
  // Means summed in transit on the global scale; an allgather quantizes each
  // shard on it (with every level: nothing is summed).
  bool supports(CodecOperation) const override { return true; }
  std::size_t granularity() const override { return config_.bits == 4 ? 2 : 1; }

  // Worst cases. Linear sum: each rank errs by less than one level, so the
  // mean does too. Linear average: one level from quantizing plus one per
  // averaging step on the element's path. Exponential: the headroom keeps
  // every code at e >= 1, i.e. |value| <= 2^(c-1) in pre-scaled units, so
  // |result| <= 2^(c-1)·norm/n.
  double max_abs_error(double norm, int ranks, Algorithm algorithm) const override {
    const bool ring = algorithm == Algorithm::ring;
    if (config_.dither == Dither::exponential) {
      return std::ldexp(norm, exp_dither::headroom(ranks, ring) - 1) / ranks + norm;
    }
    if (sums_in_transit(ranks)) return norm / linear_levels_per_rank(8, ranks);
    return (1 + exp_dither::reductions_on_path(ranks, ring)) * norm / ((1 << (config_.bits - 1)) - 1);
  }

  // Theorem 3 (p = q >= 2 covers the 2- and the inf-norm): L_s is in
  // U^{n,d}(sqrt(d)/(sqrt(n) s)) for s <= sqrt(nd), s the levels per rank,
  // i.e. E||G - mean||^2 <= theta/n ||x||_{2,2}^2 (Definition 3).
  // E_s: one quantization is in U^{n,d}(theta_q), theta_q = 1/(8n) +
  // sqrt(d)/(sqrt(n) 2^(s-1)). The paper (§4.2) says each C_nat step raises
  // the variance by 9/8, but its 9/8 bounds the second moment, E[C(z)^2] <=
  // 9/8 E[z^2]; with C unbiased, one step gives Var(out) <= 9/8 (Var a +
  // Var b) + P^2/8, P the exact partial sum, which grows along the path when
  // the ranks' values share a sign (measured: up to ~1.3x the paper's
  // (9/8)^H theta_q figure). Unrolled over the H reductions of an element's
  // path, with P_k^2 <= m_k sum_r x_r^2 (m_k ranks in the k-th partial sum:
  // k+1 on the ring, 2^k on halving-doubling) and the mean's 1/n^2:
  //   (9/8)^H theta_q/n ||x||^2 + ||x||^2/(8 n^2) sum_k (9/8)^(H-k) m_k.
  // The averaging mode (§8) has no published bound.
  std::optional<double> variance_bound(double squared_norm, std::size_t d, int ranks,
                                       Algorithm algorithm) const override {
    const double n = ranks, dims = static_cast<double>(d);
    if (config_.dither == Dither::exponential) {
      const bool ring = algorithm == Algorithm::ring;
      const int s = exp_dither::levels(exp_dither::headroom(ranks, ring));
      const int hops = exp_dither::reductions_on_path(ranks, ring);
      const double theta = 1.0 / (8 * n) + std::sqrt(dims) / (std::sqrt(n) * std::ldexp(1.0, s - 1));
      double partial_sums = 0;
      for (int k = 1; k <= hops; ++k) {
        const double members = std::min(n, ring ? k + 1.0 : std::ldexp(1.0, k));
        partial_sums += std::pow(9.0 / 8.0, hops - k) * members;
      }
      return std::pow(9.0 / 8.0, hops) * theta / n * squared_norm +
             squared_norm / (8 * n * n) * partial_sums;
    }
    if (!sums_in_transit(ranks)) return std::nullopt;
    const double s = linear_levels_per_rank(8, ranks);
    if (s > std::sqrt(n * dims)) return std::nullopt;  // outside the theorem's range
    return std::sqrt(dims) / (std::sqrt(n) * s) / n * squared_norm;
  }

 protected:
  // Algorithm 1: the global norm (line 1) comes from the step's exchange;
  // local quantization (lines 2-5) and the allreduce of the quantized values
  // (line 9) are this reduction's encode, reduce and decode. Linear: summed
  // in transit (§4.2) while n·s fits the signed 8-bit range, averaged inside
  // each step (§8) otherwise. Exponential: Algorithm 2. A zero norm means
  // every rank's input is zero: nothing moves.
  std::unique_ptr<Reduction> step_reduction(const StepSetup& setup, double norm) const override {
    if (norm == 0.0) return nullptr;
    const int ranks = setup.summed;
    const CounterRng rng(settings().seed, setup.step, settings().bucket,
                         static_cast<std::uint64_t>(setup.rank), RngStream::quantize);
    if (config_.dither == Dither::exponential) {
      return make_exp_dither_reduction(
          spec(), norm, exp_dither::headroom(ranks, setup.algorithm == Algorithm::ring), ranks, rng,
          settings(), setup.step);
    }
    if (sums_in_transit(ranks)) {
      return make_linear_sum_reduction(spec(), norm, linear_levels_per_rank(8, ranks), ranks, rng);
    }
    return make_linear_average_reduction(spec(), norm, config_.bits, ranks, rng, settings(),
                                         setup.step);
  }

  // sparse=auto: an allreduce may gather the non-zero codes instead.
  void move_data(Communicator& comm, int tag, const StepSetup& setup, Reduction& reduction,
                 const Operation& operation, const CollectiveOptions& options) override {
    const bool sparse = config_.sparse && setup.operation == CodecOperation::allreduce_mean &&
                        codes_are_bytes(setup.ranks);
    if (sparse && allreduce_sparse(comm, tag, operation, setup, reduction, options)) return;
    Codec::move_data(comm, tag, setup, reduction, operation, options);
  }

 private:
  bool sums_in_transit(int ranks) const { return config_.bits == 8 && ranks <= 127; }
  // One code byte per element (no chunk header): what the sparse path sends.
  // Beyond 127 ranks 8-bit linear dithering averages, with headers, and the
  // sparse option falls back to the dense allreduce.
  bool codes_are_bytes(int ranks) const {
    return config_.dither == Dither::exponential || sums_in_transit(ranks);
  }

  // Sparse aggregation (Algorithm 1, lines 6-8). Each rank quantizes exactly
  // as the dense path would (same generator, same codes) and counts its
  // non-zero codes; one small exchange gives every rank every count, so all
  // take the same branch. If the non-zeros, 5 bytes each (uint32 index +
  // code), total less than twice one dense encoding (the ring's per-rank
  // traffic against the allgather's), they are allgathered and every rank
  // adds them up in rank order: linear codes as exact integer sums (the
  // dense result, bit for bit), exponential codes exactly in double (no
  // C_nat rounding). Returns false, having moved no data, when dense is
  // smaller; the dense allreduce then encodes again.
  bool allreduce_sparse(Communicator& comm, int tag, const Operation& operation,
                        const StepSetup& setup, Reduction& reduction,
                        const CollectiveOptions& options) const {
    constexpr std::size_t kEntryBytes = 5;
    const std::span<const float> input = operation.input;
    const std::span<float> data = operation.output;
    const std::size_t d = input.size();
    if (d > std::numeric_limits<std::uint32_t>::max()) return false;  // same on every rank
    // Every buffer is the codec's, kept from step to step.
    SparseBuffers& b = sparse_buffers_;
    std::vector<std::byte>& codes = b.codes;
    codes.resize(d);
    if (d > 0) {
      PhaseScope timed(options.phases, &PhaseTimes::encode);
      reduction.encode(input, 0, codes);
      if (!operation.own.empty()) reduction.decode_contribution(codes, 0, operation.own);
    }
    std::vector<std::uint32_t>& index = b.index;
    index.clear();
    for (std::size_t i = 0; i < d; ++i) {
      if (codes[i] != std::byte{0}) index.push_back(static_cast<std::uint32_t>(i));
    }
    // Every rank's count, on the step's tag: every rank takes the same branch.
    const auto n = static_cast<std::size_t>(comm.size());
    const auto counts = allgather_counts_body(comm, tag, index.size(), comm.timeout(options.timeout));
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    if (total * kEntryBytes >= 2 * d) return false;

    const std::size_t nnz = index.size();
    std::vector<std::byte>& mine = b.mine;
    mine.resize(nnz * kEntryBytes);
    std::memcpy(mine.data(), index.data(), nnz * 4);
    for (std::size_t k = 0; k < nnz; ++k) mine[nnz * 4 + k] = codes[index[k]];
    std::vector<std::size_t> byte_counts(n);
    for (std::size_t r = 0; r < n; ++r) byte_counts[r] = counts[r] * kEntryBytes;
    std::vector<std::byte>& all = b.all;
    all.resize(total * kEntryBytes);
    allgatherv_bytes_body(comm, tag, mine, byte_counts, all, options);

    const int ranks = setup.ranks;
    const bool linear = config_.dither == Dither::linear;
    const int levels = linear ? linear_levels_per_rank(8, ranks) : 0;
    const int c = linear ? 0 : exp_dither::headroom(ranks, setup.algorithm == Algorithm::ring);
    std::vector<std::int32_t>& level_sum = b.level_sum;
    std::vector<double>& value_sum = b.value_sum;
    level_sum.assign(linear ? d : 0, 0);
    value_sum.assign(linear ? 0 : d, 0.0);
    PhaseScope timed(options.phases, &PhaseTimes::decode);
    std::size_t offset = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::byte* block = all.data() + offset;
      const std::size_t entries = counts[r];
      for (std::size_t k = 0; k < entries; ++k) {
        std::uint32_t i;
        std::memcpy(&i, block + 4 * k, 4);
        const auto code = static_cast<std::uint8_t>(block[4 * entries + k]);
        const int e = exp_dither::exponent(code);
        const bool bad_code = linear ? std::abs(static_cast<std::int8_t>(code)) > levels
                                     : (e < c || e > exp_dither::kMaxExponent);
        if (i >= d || bad_code) {
          throw CommError(spec() + ": sparse entry from rank " + std::to_string(r) +
                          " is out of range (corrupt message?)");
        }
        if (linear) {
          level_sum[i] += static_cast<std::int8_t>(code);
        } else {
          value_sum[i] += exp_dither::value(code, c);
        }
      }
      offset += byte_counts[r];
    }
    const double norm = setup.norm;
    if (linear) {
      // The dense decode's arithmetic (decode_levels): integer sum times
      // the same fp32 step, or in double for a step beyond fp32.
      const double step = norm / (static_cast<double>(levels) * ranks);
      const auto step_f = static_cast<float>(step);
      for (std::size_t i = 0; i < d; ++i) {
        data[i] = std::isfinite(step_f)
                      ? std::clamp(static_cast<float>(level_sum[i]) * step_f, -FLT_MAX, FLT_MAX)
                      : saturate_to_fp32(level_sum[i] * step);
      }
    } else {
      const double scale = norm / ranks;
      for (std::size_t i = 0; i < d; ++i) data[i] = saturate_to_fp32(value_sum[i] * scale);
    }
    return true;
  }

  GlobalQsgdConfig config_;
  // The sparse path's codes, non-zero positions, outgoing and gathered
  // entries and sums: allocated by the first steps, reused by the next.
  struct SparseBuffers {
    std::vector<std::byte> codes, mine, all;
    std::vector<std::uint32_t> index;
    std::vector<std::int32_t> level_sum;
    std::vector<double> value_sum;
  };
  mutable SparseBuffers sparse_buffers_;
};

}  // namespace

std::unique_ptr<Codec> make_global_qsgd_codec(const GlobalQsgdConfig& config,
                                              CodecSettings settings) {
  if (config.bits != 8 && config.bits != 4) {
    throw InvalidArgument("global-qsgd: bits=" + std::to_string(config.bits) +
                          " is not available; valid: 8, 4");
  }
  if (config.sparse && config.bits != 8) {
    throw InvalidArgument("global-qsgd: sparse=auto needs bits=8");
  }
  if (config.bits == 4 && config.dither == Dither::exponential) {
    throw InvalidArgument("global-qsgd: exponential dithering is 8-bit; use bits=8 with "
                          "dither=exp, or bits=4 with dither=linear");
  }
  return std::make_unique<GlobalQsgdCodec>(config, settings);
}

std::unique_ptr<Codec> make_global_qsgd_codec(const CodecSpec& spec, CodecSettings settings) {
  CodecParams params(spec);
  GlobalQsgdConfig config;
  config.bits = std::stoi(params.choice("bits", {"8", "4"}, "8"));
  config.dither = params.choice("dither", {"linear", "exp"}, "linear") == "linear"
                      ? Dither::linear
                      : Dither::exponential;
  config.norm = params.choice("norm", {"inf", "2"}, "inf") == "inf" ? NormKind::inf : NormKind::two;
  config.sparse = params.choice("sparse", {"off", "auto"}, "off") == "auto";
  params.finish();
  return make_global_qsgd_codec(config, settings);
}

}  // namespace qccl
