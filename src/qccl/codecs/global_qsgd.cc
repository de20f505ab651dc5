#include "qccl/codecs/global_qsgd.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qccl/codecs/counter_rng.h"
#include "qccl/codecs/exp_dither.h"
#include "qccl/codecs/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/common/errors.h"

namespace qccl {

int linear_levels_per_rank(int bits, int ranks) {
  const int largest = (1 << (bits - 1)) - 1;  // largest signed A-bit value
  const int levels = largest / ranks;
  if (levels < 1) {
    throw InvalidArgument("global-qsgd linear dithering at " + std::to_string(bits) +
                          " bits leaves no quantization level for " + std::to_string(ranks) +
                          " ranks (the in-transit sum must fit in " + std::to_string(largest) +
                          "); use at most " + std::to_string(largest) + " ranks");
  }
  return levels;
}

namespace {

// Linear dithering L_s (Global-QSGD §4.2, Definition 1, Eq. 2) as a
// Reduction on int8 chunks. encode: y = |x|/norm in [0,1], scaled to s levels
// and rounded stochastically — up with probability equal to the fractional
// part, so E[level] = y·s — keeping the sign: q in [-s, s]. reduce: integer
// addition; |partial sum| <= n·s <= 127 by the choice of s, so a larger value
// can only come from corrupt data and is rejected. decode: the mean,
// q_sum · norm / (s·n) (Algorithm 1, line 9).
class LinearDitherReduction final : public Reduction {
 public:
  LinearDitherReduction(std::string name, double norm, int levels, int ranks, CounterRng rng)
      : name_(std::move(name)), levels_(levels), limit_(levels * ranks),
        norm_(static_cast<float>(norm)), scale_(static_cast<float>(levels / norm)),
        step_(static_cast<float>(norm / (static_cast<double>(levels) * ranks))), rng_(rng) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    encode_levels(in, first, reinterpret_cast<std::int8_t*>(out.data()), scale_, norm_, levels_, rng_);
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    kernels::linear_decode_i8(reinterpret_cast<const std::int8_t*>(in.data()), out.data(),
                              out.size(), step_);
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    if (!kernels::add_i8_checked(reinterpret_cast<std::int8_t*>(accum.data()),
                                 reinterpret_cast<const std::int8_t*>(incoming.data()),
                                 context.count, limit_)) {
      throw CommError(name_ + ": a partial sum exceeds n·s = " + std::to_string(limit_) +
                      " at elements " + std::to_string(context.first) + ".." +
                      std::to_string(context.first + context.count) +
                      ", which valid input cannot produce (corrupt message?)");
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, count, count);
  }

  std::string name_;
  int levels_, limit_;
  float norm_, scale_, step_;
  CounterRng rng_;
};

// Linear dithering with averaging inside every reduction step (Global-QSGD
// §8), for bit widths where summing would overflow (4-bit, or 8-bit beyond
// 127 ranks). Each rank quantizes to s = 2^(A-1) - 1 levels; a chunk is
// [uint32 k][packed A-bit two's-complement levels], where k is how many ranks
// the chunk already averages. Combining (q_a, k_a) with (q_b, k_b) rounds the
// weighted mean (k_a q_a + k_b q_b) / (k_a + k_b) stochastically, up with
// probability equal to its fractional part: unbiased for any n (no
// saturation, unlike averaging pairs for n > 4), always within [-s, s] (a
// convex combination), and already the mean at the end (no final division to
// forget for n = 2). decode checks that the chunk averages all n ranks.
class LinearAverageReduction final : public Reduction {
 public:
  LinearAverageReduction(std::string name, double norm, int bits, int ranks, CounterRng quantize,
                         const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), bits_(bits), levels_((1 << (bits - 1)) - 1), ranks_(ranks),
        norm_(static_cast<float>(norm)), scale_(static_cast<float>(levels_ / norm)),
        value_(static_cast<float>(norm / levels_)), quantize_(quantize), settings_(settings),
        step_(step) {}

  std::string name() const override { return name_; }
  std::size_t granularity() const override { return bits_ == 4 ? 2 : 1; }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return kHeader + payload_bytes(count);
  }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    write_header(out, 1);
    auto* payload = reinterpret_cast<std::uint8_t*>(out.data() + kHeader);
    if (bits_ == 8) {
      encode_levels(in, first, reinterpret_cast<std::int8_t*>(payload), scale_, norm_, levels_, quantize_);
    } else {
      std::vector<std::int8_t>& q = levels_scratch(in.size());
      encode_levels(in, first, q.data(), scale_, norm_, levels_, quantize_);
      kernels::pack_i4(q.data(), payload, in.size());
    }
    return kHeader + payload_bytes(in.size());
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    const std::uint32_t k = read_header(in);
    if (k != static_cast<std::uint32_t>(ranks_)) {
      throw CommError(name_ + ": a decoded chunk averages " + std::to_string(k) + " of " +
                      std::to_string(ranks_) + " ranks (incomplete or corrupt aggregation)");
    }
    const auto* payload = reinterpret_cast<const std::uint8_t*>(in.data() + kHeader);
    const std::int8_t* q = reinterpret_cast<const std::int8_t*>(payload);
    if (bits_ == 4) {
      std::vector<std::int8_t>& unpacked = levels_scratch(out.size());
      kernels::unpack_i4(payload, unpacked.data(), out.size());
      q = unpacked.data();
    }
    kernels::linear_decode_i8(q, out.data(), out.size(), value_);
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    const std::uint32_t ka = read_header(accum), kb = read_header(incoming);
    const std::uint64_t k = std::uint64_t{ka} + kb;
    if (ka == 0 || kb == 0 || k > static_cast<std::uint64_t>(ranks_)) {
      throw CommError(name_ + ": chunks averaging " + std::to_string(ka) + " and " +
                      std::to_string(kb) + " ranks cannot be combined among " +
                      std::to_string(ranks_) + " (corrupt message?)");
    }
    if (k >= kMaxRanksAveraged) {
      throw CommError(name_ + ": averaging " + std::to_string(k) + " ranks exceeds the supported " +
                      std::to_string(kMaxRanksAveraged));
    }
    // The hop goes into the key: the kernels' 32-bit counter is the element.
    const CounterRng rng(settings_.seed, step_, settings_.bucket,
                         (static_cast<std::uint64_t>(context.rank) << 16) |
                             static_cast<std::uint64_t>(context.hop),
                         RngStream::reduce);
    auto* a = accum.data() + kHeader;
    const auto* b = incoming.data() + kHeader;
    if (bits_ == 8) {
      kernels::average_i8(reinterpret_cast<const std::int8_t*>(a), reinterpret_cast<const std::int8_t*>(b),
                          reinterpret_cast<std::int8_t*>(a), context.count, static_cast<std::int32_t>(ka),
                          static_cast<std::int32_t>(kb), rng.key_low(), rng.key_high(), context.first);
    } else {
      std::vector<std::int8_t>& qa = levels_scratch(2 * context.count);
      std::int8_t* qb = qa.data() + context.count;
      kernels::unpack_i4(reinterpret_cast<const std::uint8_t*>(a), qa.data(), context.count);
      kernels::unpack_i4(reinterpret_cast<const std::uint8_t*>(b), qb, context.count);
      kernels::average_i8(qa.data(), qb, qa.data(), context.count, static_cast<std::int32_t>(ka),
                          static_cast<std::int32_t>(kb), rng.key_low(), rng.key_high(), context.first);
      kernels::pack_i4(qa.data(), reinterpret_cast<std::uint8_t*>(a), context.count);
    }
    write_header(accum, static_cast<std::uint32_t>(k));
    return accum_bytes;
  }

 private:
  static constexpr std::size_t kHeader = 4;
  // The averaging kernel's fp32 floor is exact below 2^24 / 127 ranks.
  static constexpr std::uint64_t kMaxRanksAveraged = (std::uint64_t{1} << 24) / 127;

  std::vector<std::int8_t>& levels_scratch(std::size_t count) {
    if (scratch_.size() < count) scratch_.resize(count);
    return scratch_;
  }

  std::size_t payload_bytes(std::size_t count) const {
    return bits_ == 4 ? (count + 1) / 2 : count;
  }
  // Level of element i, sign-extended from its A bits.
  int get(std::span<const std::byte> chunk, std::size_t i) const {
    const auto byte = static_cast<std::uint8_t>(chunk[kHeader + (bits_ == 4 ? i / 2 : i)]);
    if (bits_ == 8) return static_cast<std::int8_t>(byte);
    const int nibble = (i % 2 ? byte >> 4 : byte) & 0xF;
    return nibble >= 8 ? nibble - 16 : nibble;
  }
  void set(std::span<std::byte> chunk, std::size_t i, int level) const {
    auto& byte = reinterpret_cast<std::uint8_t&>(chunk[kHeader + (bits_ == 4 ? i / 2 : i)]);
    if (bits_ == 8) {
      byte = static_cast<std::uint8_t>(static_cast<std::int8_t>(level));
      return;
    }
    const auto nibble = static_cast<std::uint8_t>(level & 0xF);
    byte = i % 2 ? static_cast<std::uint8_t>((byte & 0x0F) | (nibble << 4))
                 : static_cast<std::uint8_t>((byte & 0xF0) | nibble);
  }
  static void write_header(std::span<std::byte> chunk, std::uint32_t k) {
    std::memcpy(chunk.data(), &k, kHeader);
  }
  static std::uint32_t read_header(std::span<const std::byte> chunk) {
    std::uint32_t k;
    std::memcpy(&k, chunk.data(), kHeader);
    return k;
  }
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, kHeader + payload_bytes(count), count);
  }

  std::string name_;
  int bits_, levels_, ranks_;
  float norm_, scale_, value_;
  CounterRng quantize_;
  CodecSettings settings_;
  std::uint64_t step_;
  std::vector<std::int8_t> scratch_;  // unpacked levels of one chunk
};

// Exponential dithering E_s (Global-QSGD §4.2-4.3) as a Reduction on
// one-byte codes (exp_dither.h): encode quantizes y = |x|/norm to a power of
// two, pre-scaled by 2^-c; reduce is Algorithm 2's C_nat, drawing its random
// bits from the owner rank's reduce stream keyed by (hop, element), so each
// rounding happens once and its bytes are forwarded; decode returns the mean,
// value * 2^c * norm / n.
class ExpDitherReduction final : public Reduction {
 public:
  ExpDitherReduction(std::string name, double norm, int headroom, int levels, int ranks,
                     CounterRng quantize, const CodecSettings& settings, std::uint64_t step)
      : name_(std::move(name)), norm_(static_cast<float>(norm)), c_(headroom), s_(levels),
        mean_scale_(norm / ranks), quantize_(quantize), settings_(settings), step_(step) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    kernels::exp_encode(in.data(), reinterpret_cast<std::uint8_t*>(out.data()), in.size(), norm_,
                        c_, s_, quantize_.key_low(), quantize_.key_high(), first);
    return in.size();
  }

  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    check(in.size(), out.size());
    kernels::exp_decode(reinterpret_cast<const std::uint8_t*>(in.data()), out.data(), out.size(),
                        c_, static_cast<float>(mean_scale_));
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    // The hop goes into the key: the kernel's 32-bit counter is the element.
    const CounterRng rng(settings_.seed, step_, settings_.bucket,
                         (static_cast<std::uint64_t>(context.rank) << 16) |
                             static_cast<std::uint64_t>(context.hop),
                         RngStream::reduce);
    if (!kernels::exp_reduce(reinterpret_cast<std::uint8_t*>(accum.data()),
                             reinterpret_cast<const std::uint8_t*>(incoming.data()), context.count,
                             rng.key_low(), rng.key_high(), context.first)) {
      throw CommError(name_ + ": a partial sum in elements " + std::to_string(context.first) + ".." +
                      std::to_string(context.first + context.count) +
                      " exceeds the exponent headroom, which valid input cannot produce "
                      "(corrupt message?)");
    }
    return accum_bytes;
  }

 private:
  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes, count, count);
  }

  std::string name_;
  float norm_;
  int c_, s_;
  double mean_scale_;
  CounterRng quantize_;
  CodecSettings settings_;
  std::uint64_t step_;
};

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

  // Linear: summed in transit (§4.2) while n·s fits the signed 8-bit range,
  // averaged inside each step (§8) otherwise. Exponential: Algorithm 2.
  std::unique_ptr<Reduction> reduction_for(double norm, int ranks, int rank,
                                           Algorithm algorithm) const override {
    const CounterRng rng(settings().seed, step(), settings().bucket,
                         static_cast<std::uint64_t>(rank), RngStream::quantize);
    if (config_.dither == Dither::exponential) {
      const int c = exp_dither::headroom(ranks, algorithm == Algorithm::ring);
      return std::make_unique<ExpDitherReduction>(spec(), norm, c, exp_dither::levels(c), ranks,
                                                  rng, settings(), step());
    }
    if (sums_in_transit(ranks)) {
      return std::make_unique<LinearDitherReduction>(spec(), norm, linear_levels_per_rank(8, ranks),
                                                     ranks, rng);
    }
    return std::make_unique<LinearAverageReduction>(spec(), norm, config_.bits, ranks, rng,
                                                    settings(), step());
  }

  // Worst cases, with H the reductions on an element's path (ring: n-1;
  // tree: ceil(log2 n) rounds). Linear sum: each rank errs by less than one
  // level, so the mean does too. Linear average: one level from quantizing
  // plus one per averaging step. Exponential: every rank's value is at most
  // 2^-c in pre-scaled units and each reduction at most doubles the larger
  // operand, so |result| <= 2^H·norm/n.
  double max_abs_error(double norm, int ranks, Algorithm algorithm) const override {
    int rounds = 0;
    while ((1 << rounds) < ranks) ++rounds;
    const int hops = algorithm == Algorithm::ring ? ranks - 1 : rounds;
    if (config_.dither == Dither::exponential) {
      return std::ldexp(norm, std::min(hops, 64)) / ranks + norm;
    }
    if (sums_in_transit(ranks)) return norm / linear_levels_per_rank(8, ranks);
    return (1 + hops) * norm / ((1 << (config_.bits - 1)) - 1);
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
  // k+1 on the ring, 2^k on the tree) and the mean's 1/n^2:
  //   (9/8)^H theta_q/n ||x||^2 + ||x||^2/(8 n^2) sum_k (9/8)^(H-k) m_k.
  // The averaging mode (§8) has no published bound.
  std::optional<double> variance_bound(double squared_norm, std::size_t d, int ranks,
                                       Algorithm algorithm) const override {
    const double n = ranks, dims = static_cast<double>(d);
    if (config_.dither == Dither::exponential) {
      const bool ring = algorithm == Algorithm::ring;
      const int s = exp_dither::levels(exp_dither::headroom(ranks, ring));
      int rounds = 0;
      while ((1 << rounds) < ranks) ++rounds;
      const int hops = ring ? ranks - 1 : rounds;
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
  // Algorithm 1: global norm (line 1), local quantization (lines 2-5), and
  // the allreduce of the quantized values (line 9), decoded to the mean.
  void run_allreduce_mean(Communicator& comm, std::span<float> data,
                          const CollectiveOptions& options) override {
    const std::string what = spec() + " step " + std::to_string(step()) + " bucket " +
                             std::to_string(settings().bucket);
    const double norm = global_norm(comm, data, config_.norm, what,
                                    options.timeout.value_or(comm.options().timeout));
    if (config_.dither == Dither::exponential && options.algorithm == Algorithm::native) {
      throw InvalidArgument(spec() + ": runs on algorithm ring or tree");
    }
    if (norm == 0.0) {  // every rank's input is zero, and every rank knows it
      std::fill(data.begin(), data.end(), 0.0f);
      return;
    }
    const auto reduction = reduction_for(norm, comm.size(), comm.rank(), options.algorithm);
    if (config_.sparse && allreduce_sparse(comm, data, norm, *reduction, options)) return;
    allreduce(comm, data, *reduction, options);
  }

 private:
  bool sums_in_transit(int ranks) const { return config_.bits == 8 && ranks <= 127; }

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
  bool allreduce_sparse(Communicator& comm, std::span<float> data, double norm,
                        Reduction& reduction, const CollectiveOptions& options) const {
    constexpr std::size_t kEntryBytes = 5;
    const std::size_t d = data.size();
    if (d > std::numeric_limits<std::uint32_t>::max()) return false;  // same on every rank
    std::vector<std::byte> codes(d);
    if (d > 0) reduction.encode(data, 0, codes);
    std::vector<std::uint32_t> index;
    for (std::size_t i = 0; i < d; ++i) {
      if (codes[i] != std::byte{0}) index.push_back(static_cast<std::uint32_t>(i));
    }
    const auto counts = allgather_counts(comm, index.size(), options);
    std::size_t total = 0;
    for (auto c : counts) total += c;
    if (total * kEntryBytes >= 2 * d) return false;

    const std::size_t nnz = index.size();
    std::vector<std::byte> mine(nnz * kEntryBytes);
    std::memcpy(mine.data(), index.data(), nnz * 4);
    for (std::size_t k = 0; k < nnz; ++k) mine[nnz * 4 + k] = codes[index[k]];
    std::vector<std::size_t> byte_counts(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) byte_counts[r] = counts[r] * kEntryBytes;
    std::vector<std::byte> all(total * kEntryBytes);
    CollectiveOptions gather = options;
    gather.algorithm = Algorithm::ring;
    allgatherv_bytes(comm, mine, byte_counts, all, gather);

    const int n = comm.size();
    const bool linear = config_.dither == Dither::linear;
    const int levels = linear ? linear_levels_per_rank(8, n) : 0;
    const int c = linear ? 0 : exp_dither::headroom(n, options.algorithm == Algorithm::ring);
    std::vector<std::int32_t> level_sum(linear ? d : 0, 0);
    std::vector<double> value_sum(linear ? 0 : d, 0.0);
    std::size_t offset = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      const std::byte* block = all.data() + offset;
      for (std::size_t k = 0; k < counts[r]; ++k) {
        std::uint32_t i;
        std::memcpy(&i, block + 4 * k, 4);
        const auto code = static_cast<std::uint8_t>(block[4 * counts[r] + k]);
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
    if (linear) {
      // The dense decode's arithmetic: integer sum times the same fp32 step.
      const auto step = static_cast<float>(norm / (static_cast<double>(levels) * n));
      for (std::size_t i = 0; i < d; ++i) data[i] = static_cast<float>(level_sum[i]) * step;
    } else {
      const double scale = norm / n;
      for (std::size_t i = 0; i < d; ++i) data[i] = static_cast<float>(value_sum[i] * scale);
    }
    return true;
  }

  GlobalQsgdConfig config_;
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
