#include "qccl/codecs/quantizers/global_qsgd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/codecs/quantizers/exp_dither_reduction.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/quantizers/linear_dither.h"
#include "qccl/codecs/merge_by_index.h"
#include "qccl/codecs/sparse_messages.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/direct_gather.h"
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
  // Means summed in transit on the global scale; an allgather quantizes each
  // shard on it (with every level: nothing is summed).
  CodecTraits traits() const override {
    return {.unbiased = true,
            .norm_kind = config_.norm,
            .granularity = config_.bits == 4 ? std::size_t{2} : std::size_t{1},
            .host_means = true,
            .zero_stays_zero = true,  // zeros always code to 0
            .device_step = true};
  }
  // Payload only; averaging chunks add a 4-byte header per pipelined chunk.
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {payload_bytes(q.count), abs_error(q.inf_norm, q.ranks, q.algorithm),
            variance(q.squared_norm, q.count, q.ranks, q.algorithm)};
  }

  // Worst cases. Linear sum: each rank errs by less than one level, so the
  // mean does too. Linear average: one level from quantizing plus one per
  // averaging step on the element's path. Exponential: the headroom keeps
  // every code at e >= 1, i.e. |value| <= 2^(c-1) in pre-scaled units, so
  // |result| <= 2^(c-1)·norm/n.
  double abs_error(double norm, int ranks, Algorithm algorithm) const {
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
  std::optional<double> variance(double squared_norm, std::size_t d, int ranks,
                                 Algorithm algorithm) const {
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
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    const double norm = setup.norm;
    if (norm == 0.0) return nullptr;
    const int ranks = setup.summed;
    const CounterRng rng = quantize_rng(setup);
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
  void move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                 const Operation& operation, const CollectiveOptions& options) override {
    const bool sparse = config_.sparse && setup.operation == CodecOperation::allreduce_mean &&
                        (config_.bits == 4 || codes_are_bytes(setup.ranks));
    if (sparse) {
      // 4-bit codes are averaged at every hop of the dense path; the sparse
      // path sums each rank's own 4-bit levels, one byte per code, exactly.
      std::unique_ptr<Reduction> four_bit;
      if (config_.bits == 4) {
        four_bit = make_linear_sum_reduction(spec(), setup.norm, sparse_levels(setup.ranks),
                                             setup.ranks, quantize_rng(setup));
      }
      if (allreduce_sparse(comm, tag, operation, setup, four_bit ? *four_bit : encoding, options)) {
        return;
      }
    }
    default_move_data(comm, tag, setup, encoding, operation, options);
  }

 private:
  // One rank's codes of `count` elements, without chunk headers: what the
  // sparse path weighs its entries against, every step.
  std::size_t payload_bytes(std::size_t count) const {
    return (count * static_cast<std::size_t>(config_.bits) + 7) / 8;
  }
  bool sums_in_transit(int ranks) const { return config_.bits == 8 && ranks <= 127; }
  // The generator of this rank's quantization in this step.
  CounterRng quantize_rng(const StepSetup& setup) const {
    return CounterRng(settings().seed, setup.step, settings().bucket,
                      static_cast<std::uint64_t>(setup.rank), RngStream::quantize);
  }
  // Linear levels per rank of the sparse path's codes: the in-transit sum's
  // at 8 bits, all 7 of a signed 4-bit code at 4 bits (the sum is exact in
  // int32 there, so it needs no headroom).
  int sparse_levels(int ranks) const {
    return config_.bits == 4 ? 7 : linear_levels_per_rank(8, ranks);
  }
  // One code byte per element (no chunk header): what the sparse path sends.
  // Beyond 127 ranks 8-bit linear dithering averages, with headers, and the
  // sparse option falls back to the dense allreduce.
  bool codes_are_bytes(int ranks) const {
    return config_.dither == Dither::exponential || sums_in_transit(ranks);
  }

  // Sparse aggregation (Algorithm 1, lines 6-8). Each rank quantizes exactly
  // as the dense path would (same generator, same codes: zeros always code
  // to 0) and lists its non-zero codes. If the ranks' messages — the
  // non-zeros, 5 bytes each (uint32 index + code), or, given a support, its
  // runs with every code when that is smaller (sparse_messages.h: an
  // embedding row of 16 in 24 bytes) — total less than twice one dense
  // encoding (the ring's per-rank traffic against the allgather's), they
  // are allgathered and every rank adds them up in rank order: linear codes as exact integer
  // sums (the dense result, bit for bit), exponential codes exactly in
  // double (no C_nat rounding). Returns false, having moved no data, when
  // dense is smaller; the dense allreduce then encodes again. At 4 bits the
  // codes are each rank's own 7-level ones (`encoding` makes them), summed
  // exactly: unbiased, not the dense path's bits.
  //
  // Every rank takes the same branch, from numbers every rank has: the
  // bounds on the non-zeros that the step's exchange carried
  // (prepare's shared value), or else a round of the messages' sizes. Given a support
  // (allreduce_mean_sparse) and no `own` to fill, the time follows the
  // non-zeros: only the support is encoded and cleared, and the gathered
  // entries are summed by merging the ranks' lists, written at their
  // indices only.
  bool allreduce_sparse(Communicator& comm, int tag, const Operation& operation,
                        const StepSetup& setup, Encoding& encoding,
                        const CollectiveOptions& options) const {
    const std::size_t d = operation.input.size();
    if (d > std::numeric_limits<std::uint32_t>::max()) return false;  // same on every rank
    list_own_codes(operation, encoding, options, on_support(operation));
    const auto bounds = one_round_bounds(comm, setup, d);
    const auto counts = bounds.empty() ? gather_after_counts(comm, tag, d, options)
                                       : gather_within_bounds(comm, tag, bounds, d, options);
    if (counts.empty()) return false;

    PhaseScope timed(options.phases, &PhaseTimes::decode);
    if (on_support(operation)) {
      for (const Range& r : operation.support) {
        std::fill_n(operation.output.begin() + static_cast<std::ptrdiff_t>(r.first), r.count, 0.0f);
      }
    } else {
      std::fill(operation.output.begin(), operation.output.end(), 0.0f);
    }
    sum_gathered_codes(counts, setup, operation.output);
    return true;
  }

  // Whether the sparse path encodes the support alone.
  static bool on_support(const Operation& operation) {
    return operation.has_support && operation.own.empty();
  }
  // The bound on this rank's non-zero codes that the step's exchange
  // carries to every rank: the support's size where only the support is
  // encoded (the codes are zero wherever the input is), else −1 (none).
  StepPreparation prepare(Communicator&, const StepSetup&, const Operation& operation,
                          const CollectiveOptions&) override {
    if (!config_.sparse || operation.kind != CodecOperation::allreduce_mean ||
        !on_support(operation)) {
      return {.shared = -1};
    }
    std::size_t bound = 0;
    for (const Range& r : operation.support) bound += r.count;
    return {.shared = static_cast<double>(bound)};
  }
  // Every rank's bound, if every rank has one, the ranks are few enough
  // for one direct round (kDirectGatherRanks) and the entries the bounds
  // allow are sparse even at their largest; else empty (the exact counts
  // decide).
  std::vector<std::size_t> one_round_bounds(const Communicator& comm, const StepSetup& setup,
                                            std::size_t d) const {
    std::vector<std::size_t> bounds;
    if (comm.size() > kDirectGatherRanks) return bounds;
    std::size_t total = 0;
    for (const double bound : setup.shared_values) {
      if (!(bound >= 0) || bound > static_cast<double>(d)) return {};
      bounds.push_back(static_cast<std::size_t>(bound));
      total += sparse_message_capacity(bounds.back());
    }
    if (total >= 2 * payload_bytes(d)) return {};
    return bounds;
  }
  // This rank's message (b.mine, sparse_messages.h): its non-zero entries,
  // or its support's runs with every code when that is smaller.
  void pack_own_message() const {
    SparseBuffers& b = sparse_buffers_;
    pack_sparse_message(b.index, b.own_codes, b.runs, b.run_codes, b.mine);
  }
  // One round: every rank's message into b.all, within the bounds' room,
  // each message's size read from it; then packed in rank order and
  // expanded into entries. Returns the counts of entries.
  std::vector<std::size_t> gather_within_bounds(Communicator& comm, int tag,
                                                std::span<const std::size_t> bounds, std::size_t d,
                                                const CollectiveOptions& options) const {
    SparseBuffers& b = sparse_buffers_;
    pack_own_message();
    std::vector<std::size_t> room(bounds.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < bounds.size(); ++r) {
      total += room[r] = sparse_message_capacity(bounds[r]);
    }
    b.all.resize(total);
    const auto received = allgatherv_bytes_within(comm, tag, b.mine, room, b.all,
                                                  comm.timeout(options.timeout), spec());
    return expand_packed(received, room, d);
  }
  // A round of every rank's count of non-zeros, then, if their entries
  // are smaller than dense, every rank's message into b.all, expanded into
  // entries; returns the counts of entries (empty: dense). The decision
  // weighs the entries whatever form a message takes, as the bounds do, so
  // a call with a support and one without take the same path (the sums of
  // exponential codes differ between the two). Up to kDirectGatherRanks
  // the messages go in one round within their entries' room (the runs form
  // is never larger); beyond, on the ring, as entries of known size.
  std::vector<std::size_t> gather_after_counts(Communicator& comm, int tag, std::size_t d,
                                               const CollectiveOptions& options) const {
    SparseBuffers& b = sparse_buffers_;
    const auto counts = allgather_counts_body(comm, tag, b.index.size(), comm.timeout(options.timeout));
    std::vector<std::size_t> room(counts.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) total += room[r] = sparse_message_capacity(counts[r]);
    if (total >= 2 * payload_bytes(d)) return {};
    b.all.resize(total);
    if (comm.size() <= kDirectGatherRanks) {
      pack_own_message();
      const auto received = allgatherv_bytes_within(comm, tag, b.mine, room, b.all,
                                                    comm.timeout(options.timeout), spec());
      return expand_packed(received, room, d);
    }
    pack_sparse_message(b.index, b.own_codes, {}, {}, b.mine);  // entries: their size is known
    allgatherv_bytes_body(comm, tag, b.mine, room, b.all, options);
    return expand_sparse_messages(b.all, room, d, spec(), b.entries);
  }
  // The messages received within `room` each, moved together in rank
  // order and expanded into entries; returns the counts of entries.
  std::vector<std::size_t> expand_packed(std::span<const std::size_t> received,
                                         std::span<const std::size_t> room, std::size_t d) const {
    SparseBuffers& b = sparse_buffers_;
    std::size_t from = 0, to = 0;
    for (std::size_t r = 0; r < received.size(); ++r) {
      std::memmove(b.all.data() + to, b.all.data() + from, received[r]);
      from += room[r];
      to += received[r];
    }
    return expand_sparse_messages(std::span(b.all).first(to), received, d, spec(), b.entries);
  }

  // This rank's non-zero codes and their indices (b.own_codes, b.index), in
  // increasing index order: from the support's ranges alone, or from the
  // whole input (which also gives `own`).
  void list_own_codes(const Operation& operation, Encoding& encoding,
                      const CollectiveOptions& options, bool on_support) const {
    SparseBuffers& b = sparse_buffers_;
    b.index.clear();
    b.own_codes.clear();
    b.runs.clear();
    b.run_codes.clear();
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    const auto add_nonzero = [&b](std::span<const std::byte> codes, std::size_t first) {
      for (std::size_t k = 0; k < codes.size(); ++k) {
        if (codes[k] == std::byte{0}) continue;
        b.index.push_back(static_cast<std::uint32_t>(first + k));
        b.own_codes.push_back(codes[k]);
      }
    };
    if (on_support) {
      // Encoded straight into the runs form of the message
      // (sparse_messages.h); the non-zeros listed from there.
      for (const Range& r : operation.support) {
        if (r.count == 0) continue;
        const std::size_t at = b.run_codes.size();
        b.run_codes.resize(at + r.count);
        const auto codes = std::span(b.run_codes).subspan(at, r.count);
        encoding.encode(operation.input.subspan(r.first, r.count), r.first, codes);
        add_nonzero(codes, r.first);
        b.runs.push_back(r);
      }
      return;
    }
    b.codes.resize(operation.input.size());
    if (b.codes.empty()) return;
    encoding.encode(operation.input, 0, b.codes);
    if (!operation.own.empty()) encoding.decode_contribution(b.codes, 0, operation.own);
    add_nonzero(b.codes, 0);
  }

  // Writes the mean at every gathered index of `output` (zero elsewhere
  // already): the ranks' codes of each index summed in rank order, merged
  // by index (merge_by_index.h). Throws CommError for an index out of range
  // or out of order, or a code out of range.
  void sum_gathered_codes(std::span<const std::size_t> counts, const StepSetup& setup,
                          std::span<float> output) const {
    const bool linear = config_.dither == Dither::linear;
    const int levels = linear ? sparse_levels(setup.ranks) : 0;
    const int c = linear ? 0 : exp_dither::headroom(setup.ranks, setup.algorithm == Algorithm::ring);
    const auto bad_code = [&](std::size_t r) {
      return CommError(spec() + ": sparse entry from rank " + std::to_string(r) +
                       " is out of range (corrupt message?)");
    };
    if (linear) {
      // The dense decode's arithmetic (decode_levels): integer sum times the
      // same fp32 step, or in double for a step beyond fp32.
      const double step = setup.norm / (static_cast<double>(levels) * setup.ranks);
      const auto step_f = static_cast<float>(step);
      std::int32_t sum = 0;
      merge_by_index(
          sparse_buffers_.entries, counts, output.size(), spec(),
          [&](std::size_t r, std::uint8_t code) {
            const auto level = static_cast<std::int8_t>(code);
            if (std::abs(level) > levels) throw bad_code(r);
            sum += level;
          },
          [&](std::uint32_t i) {
            output[i] = std::isfinite(step_f)
                            ? std::clamp(static_cast<float>(sum) * step_f, -FLT_MAX, FLT_MAX)
                            : saturate_to_fp32(sum * step);
            sum = 0;
          });
      return;
    }
    // Exponential codes: their values summed exactly in double (no C_nat
    // rounding), then scaled.
    const double scale = setup.norm / setup.ranks;
    double sum = 0.0;
    merge_by_index(
        sparse_buffers_.entries, counts, output.size(), spec(),
        [&](std::size_t r, std::uint8_t code) {
          const int e = exp_dither::exponent(code);
          if (e < c || e > exp_dither::kMaxExponent) throw bad_code(r);
          sum += exp_dither::value(code, c);
        },
        [&](std::uint32_t i) {
          output[i] = saturate_to_fp32(sum * scale);
          sum = 0.0;
        });
  }


  GlobalQsgdConfig config_;
  // The sparse path's codes, non-zero positions, and outgoing and gathered
  // entries: allocated by the first steps, reused by the next.
  struct SparseBuffers {
    std::vector<std::byte> codes, own_codes, mine, all, run_codes, entries;
    std::vector<std::uint32_t> index;
    std::vector<Range> runs;
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
  if (config.bits == 4 && config.dither == Dither::exponential) {
    throw InvalidArgument("global-qsgd: exponential dithering is 8-bit; use bits=8 with "
                          "dither=exp, or bits=4 with dither=linear");
  }
  return std::make_unique<GlobalQsgdCodec>(config, settings);
}

std::unique_ptr<Codec> make_global_qsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
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
