#include "qccl/tools/collective_bench.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/broadcast.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/errors.h"

namespace qccl::tools {

std::string_view to_string(BenchOperation op) {
  switch (op) {
    case BenchOperation::allreduce: return "allreduce";
    case BenchOperation::allgather: return "allgather";
    case BenchOperation::reduce_scatter: return "reduce-scatter";
    case BenchOperation::broadcast: return "broadcast";
  }
  return "unknown";
}

std::vector<Algorithm> algorithms_for(BenchOperation op) {
  if (op == BenchOperation::broadcast) return {Algorithm::ring};  // the pipelined binomial tree
  if (op == BenchOperation::allreduce) {
    return {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native,
            Algorithm::hierarchical};
  }
  return {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native};
}

std::optional<CodecOperation> codec_operation(BenchOperation op) {
  switch (op) {
    case BenchOperation::allreduce: return CodecOperation::allreduce_mean;
    case BenchOperation::reduce_scatter: return CodecOperation::reduce_scatter_mean;
    case BenchOperation::allgather: return CodecOperation::allgather;
    case BenchOperation::broadcast: return std::nullopt;
  }
  return std::nullopt;
}

double bus_factor(BenchOperation op, int ranks) {
  const double n = ranks;
  switch (op) {
    case BenchOperation::allreduce: return 2.0 * (n - 1) / n;
    case BenchOperation::allgather:
    case BenchOperation::reduce_scatter: return (n - 1) / n;
    case BenchOperation::broadcast: return 1.0;
  }
  return 1.0;
}

void validate(const BenchConfig& c) {
  const std::string op(to_string(c.operation));
  if (c.algorithms.empty()) throw InvalidArgument("bench " + op + ": no algorithm given");
  const auto valid = algorithms_for(c.operation);
  for (Algorithm a : c.algorithms) {
    // A codec runs its reduce-scatter and allgather in two levels too.
    const bool codec_levels = a == Algorithm::hierarchical && !c.codec.empty() &&
                              c.operation != BenchOperation::broadcast;
    if (a == Algorithm::hierarchical && c.codec.empty() &&
        (c.operation == BenchOperation::reduce_scatter ||
         c.operation == BenchOperation::allgather)) {
      throw InvalidArgument("bench " + op + ": hierarchical runs " + op +
                            " through a codec; pass --codec (fp32 for plain means)");
    }
    if (!codec_levels && std::find(valid.begin(), valid.end(), a) == valid.end()) {
      std::string names;
      for (Algorithm v : valid) names += (names.empty() ? "" : ", ") + std::string(to_string(v));
      throw InvalidArgument("bench " + op + ": algorithm '" + std::string(to_string(a)) +
                            "' is not available; valid: " + names);
    }
  }
  if (c.min_bytes > c.max_bytes) {
    throw InvalidArgument("bench: --min-bytes (" + std::to_string(c.min_bytes) +
                          ") is larger than --max-bytes (" + std::to_string(c.max_bytes) + ")");
  }
  if (c.min_bytes < sizeof(float)) throw InvalidArgument("bench: --min-bytes must be at least 4");
  if (c.step_factor < 2) throw InvalidArgument("bench: --step-factor must be at least 2");
  if (c.iterations < 1) throw InvalidArgument("bench: --iters must be at least 1");
  if (c.warmup < 0) throw InvalidArgument("bench: --warmup must not be negative");
  if (!c.codec.empty()) {
    const auto operation = codec_operation(c.operation);
    if (!operation) {
      throw InvalidArgument("bench " + op + ": --codec applies to allreduce, reduce-scatter and "
                            "allgather");
    }
    const auto codec = make_codec(c.codec);  // throws for an unknown codec or parameter
    codec->check_supported(*operation);
    if (c.native_codec && !codec->has_native_equivalent()) {
      throw InvalidArgument("bench " + op + ": codec " + codec->spec() +
                            " has no MPI equivalent for --native-codec (fp16 has)");
    }
  }
  if (c.native_codec && c.codec.empty()) {
    throw InvalidArgument("bench " + op + ": --native-codec needs --codec");
  }
  if (c.in_place && (c.operation == BenchOperation::reduce_scatter ||
                     c.operation == BenchOperation::broadcast)) {
    throw InvalidArgument("bench " + op +
                          ": --in-place applies to allreduce and allgather (broadcast is always "
                          "in place; reduce-scatter writes a separate block)");
  }
}

namespace {

// Closed-form data: small integers, exact in fp32 in any summation order.
float value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * (static_cast<long>(i % 13) - 6));
}
float value_sum(int ranks, std::size_t i) {
  return static_cast<float>(static_cast<long>(ranks) * (ranks + 1) / 2 *
                            (static_cast<long>(i % 13) - 6));
}

// The global norm of every rank's input value(r, i) = (r+1)(i mod 13 - 6)
// in closed form: the largest |value| is 6n (i = 0 on rank n-1); the sum of
// squares is sum_r (r+1)^2 · sum_i (i mod 13 - 6)^2, where sum_r (r+1)^2 =
// n(n+1)(2n+1)/6 and each full cycle of 13 indices contributes 182.
double inputs_norm(int ranks, std::size_t count, NormKind kind) {
  if (count == 0) return 0.0;
  const double n = ranks;
  if (kind == NormKind::inf) return 6.0 * n;
  double cycle_squares = 182.0 * static_cast<double>(count / 13);
  for (std::size_t k = 0; k < count % 13; ++k) {
    cycle_squares += (static_cast<double>(k) - 6) * (static_cast<double>(k) - 6);
  }
  return std::sqrt(n * (n + 1) * (2 * n + 1) / 6 * cycle_squares);
}

// Buffers and closed form of one (operation, size) case on this rank.
class BenchCase {
 public:
  BenchCase(Communicator& comm, const BenchConfig& config, std::size_t bytes)
      : comm_(comm), config_(config), n_(comm.size()), rank_(comm.rank()) {
    const std::size_t elements = bytes / sizeof(float);
    if (!config.codec.empty()) codec_ = make_codec(config.codec);
    switch (config.operation) {
      case BenchOperation::allgather:
        per_rank_ = elements / static_cast<std::size_t>(n_);
        total_ = per_rank_ * static_cast<std::size_t>(n_);
        input_.resize(per_rank_);
        output_.resize(total_);
        break;
      case BenchOperation::reduce_scatter: {
        total_ = elements;
        // The codec's blocks keep its granularity; the fp32 baseline takes
        // the same ones, so both compute the same blocks.
        const auto blocks = codec_ ? codec_->reduce_scatter_blocks(total_, n_)
                                   : reduce_scatter_blocks(total_, n_, 1);
        block_ = blocks[static_cast<std::size_t>(rank_)];
        block_counts_ = range_counts(blocks);
        input_.resize(total_);
        output_.resize(block_.count);
        break;
      }
      case BenchOperation::allreduce:
      case BenchOperation::broadcast:
        total_ = elements;
        input_.resize(total_);
        output_.resize(total_);
        break;
    }
    for (std::size_t i = 0; i < input_.size(); ++i) input_[i] = value(rank_, i);
    if (codec_) {
      const bool gather = config.operation == BenchOperation::allgather;
      norm_ = inputs_norm(n_, gather ? per_rank_ : total_, codec_->norm_kind());
    }
  }

  std::size_t total_elements() const { return total_; }
  // Whether results can be checked: exact, or a codec with a finite bound.
  bool checkable() const { return std::isfinite(tolerance_); }

  // Whether `algorithm` runs the codec (native is the fp32 baseline unless
  // --native-codec).
  bool uses_codec(Algorithm algorithm) const {
    return codec_ && (algorithm != Algorithm::native || config_.native_codec);
  }

  // Before each call: which algorithm it is for (the check depends on it).
  void select(Algorithm algorithm) {
    algorithm_ = algorithm;
    tolerance_ = uses_codec(algorithm) ? bound() : 0.0;
  }

  // Untimed: restores inputs an in-place call overwrote and poisons outputs,
  // so a call that silently does nothing is caught by the check.
  void prepare() {
    const float poison = std::numeric_limits<float>::quiet_NaN();
    if (uses_codec(algorithm_)) {
      // Codecs that scale by the optimizer's history (IntSGD) see the update
      // SGD with step 1 would make; their first call is exact.
      if (has_result_) feed_back();
      tolerance_ = bound();
    }
    switch (config_.operation) {
      case BenchOperation::allreduce:
        if (config_.in_place || uses_codec(algorithm_)) {
          for (std::size_t i = 0; i < total_; ++i) output_[i] = value(rank_, i);
        } else {
          std::fill(output_.begin(), output_.end(), poison);
        }
        break;
      case BenchOperation::allgather:
        std::fill(output_.begin(), output_.end(), poison);
        if (config_.in_place) {
          std::copy(input_.begin(), input_.end(),
                    output_.begin() + static_cast<long>(per_rank_) * rank_);
        }
        break;
      case BenchOperation::reduce_scatter:
        std::fill(output_.begin(), output_.end(), poison);
        break;
      case BenchOperation::broadcast:
        for (std::size_t i = 0; i < total_; ++i) output_[i] = rank_ == 0 ? value(0, i) : poison;
        break;
    }
  }

  void run(const CollectiveOptions& options) {
    const bool codec = uses_codec(algorithm_);
    has_result_ = has_result_ || codec;
    switch (config_.operation) {
      case BenchOperation::allreduce:
        if (codec) {
          codec_->allreduce_mean(comm_, output_, options);  // in place: codecs are
        } else if (config_.in_place) {
          allreduce(comm_, output_, sum_, options);
        } else {
          allreduce(comm_, input_, output_, sum_, options);
        }
        break;
      case BenchOperation::allgather: {
        std::span<const float> mine = input_;
        if (config_.in_place) {
          mine = std::span<const float>(output_).subspan(per_rank_ * static_cast<std::size_t>(rank_), per_rank_);
        }
        if (codec) {
          codec_->allgather(comm_, mine, output_, options);
        } else {
          allgather(comm_, mine, output_, options);
        }
        break;
      }
      case BenchOperation::reduce_scatter:
        if (codec) {
          codec_->reduce_scatter_mean(comm_, input_, output_, options);
        } else {
          reduce_scatter(comm_, input_, output_, sum_, options, block_counts_);
        }
        break;
      case BenchOperation::broadcast:
        broadcast(comm_, output_, 0, options);
        break;
    }
  }

  std::size_t count_wrong() const {
    const bool codec = uses_codec(algorithm_);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < output_.size(); ++i) {
      double expected = 0;
      switch (config_.operation) {
        case BenchOperation::allreduce:
          expected = codec ? static_cast<double>(value_sum(n_, i)) / n_ : value_sum(n_, i);
          break;
        case BenchOperation::allgather:
          expected = value(static_cast<int>(i / per_rank_), i % per_rank_);
          break;
        case BenchOperation::reduce_scatter:
          expected = codec ? static_cast<double>(value_sum(n_, block_.first + i)) / n_
                           : value_sum(n_, block_.first + i);
          break;
        case BenchOperation::broadcast: expected = value(0, i); break;
      }
      // Exact for the plain collectives; a codec's mean or shards within its
      // worst-case error.
      if (!(std::abs(output_[i] - expected) <= tolerance_)) ++wrong;
    }
    return wrong;
  }

 private:
  double bound() const {
    if (algorithm_ == Algorithm::hierarchical) {
      HostGroups& groups = comm_.host_groups();
      return codec_->hierarchical_error_bound(norm_, groups.hosts(), groups.local_size(),
                                              config_.between_hosts,
                                              *codec_operation(config_.operation));
    }
    return codec_->error_bound(norm_, n_, algorithm_, *codec_operation(config_.operation));
  }

  // The update SGD with step 1 would make: from the last mean (allreduce),
  // or from the exact mean, which every rank knows in full (reduce-scatter
  // leaves each rank only its block of the result).
  void feed_back() {
    if (codec_->step_feedback() == nullptr) return;
    if (config_.operation == BenchOperation::allreduce) {
      feed_sgd_step(*codec_, output_);
      return;
    }
    std::vector<float> mean(total_);
    for (std::size_t i = 0; i < total_; ++i) {
      mean[i] = static_cast<float>(static_cast<double>(value_sum(n_, i)) / n_);
    }
    feed_sgd_step(*codec_, mean);
  }

  Communicator& comm_;
  const BenchConfig& config_;
  int n_, rank_;
  std::size_t total_ = 0, per_rank_ = 0;
  Range block_;
  std::vector<std::size_t> block_counts_;
  std::vector<float> input_, output_;
  Fp32Sum sum_;
  std::unique_ptr<Codec> codec_;
  double norm_ = 0;
  Algorithm algorithm_ = Algorithm::ring;
  double tolerance_ = 0;
  bool has_result_ = false;
};

double percentile(std::vector<double> sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double median(const std::vector<double>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

}  // namespace

namespace {

// Every option that shapes the calls, compared across ranks before any data
// moves: a rank launched with another size or codec fails every rank at
// once with a MismatchError naming the option, instead of hanging in a
// collective until the timeout.
void check_settings_agree(Communicator& comm, const BenchConfig& c) {
  std::string algorithms;
  for (const Algorithm a : c.algorithms) algorithms += std::string(to_string(a)) + " ";
  // Grouped (a fingerprint holds at most 8 fields); each text names its options.
  const auto text = [](std::initializer_list<std::pair<const char*, std::string>> options) {
    std::string joined;
    for (const auto& [name, value] : options) {
      joined += (joined.empty() ? "" : ", ") + std::string(name) + " " + value;
    }
    return joined;
  };
  Fingerprint fingerprint("bench settings");
  fingerprint.add_text("operation and --algo", std::string(to_string(c.operation)) + " " + algorithms +
                                                   "--between-hosts " +
                                                   std::string(to_string(c.between_hosts)))
      .add_text("sizes", text({{"--min-bytes", std::to_string(c.min_bytes)},
                               {"--max-bytes", std::to_string(c.max_bytes)},
                               {"--step-factor", std::to_string(c.step_factor)}}))
      .add_text("repetitions", text({{"--iters", std::to_string(c.iterations)},
                                     {"--warmup", std::to_string(c.warmup)}}))
      .add_text("transfers", text({{"--in-place", c.in_place ? "on" : "off"},
                                   {"--chunk-bytes", std::to_string(c.chunk_bytes)},
                                   {"--window", std::to_string(c.window)},
                                   {"--host-part-bytes", std::to_string(c.host_part_bytes)}}))
      .add_text("codec", text({{"--codec", c.codec.empty() ? "(none)" : c.codec},
                               {"--native-codec", c.native_codec ? "on" : "off"}}));
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

}  // namespace


std::vector<BenchRow> run_collective_bench(Communicator& comm, const BenchConfig& config) {
  validate(config);
  check_settings_agree(comm, config);
  Transport& transport = comm.transport();
  const Timeout timeout = comm.options().timeout;
  std::vector<BenchRow> rows;
  for (std::size_t bytes = config.min_bytes; bytes <= config.max_bytes;) {
    BenchCase bench(comm, config, bytes);
    const std::size_t total_bytes = bench.total_elements() * sizeof(float);
    // Algorithms interleaved per size, so each is measured next to the others.
    for (Algorithm algorithm : config.algorithms) {
      CollectiveOptions options;
      options.algorithm = algorithm;
      options.chunk_bytes = config.chunk_bytes;
      options.window = config.window;
      options.host_part_bytes = config.host_part_bytes;
      options.between_hosts = config.between_hosts;
      bench.select(algorithm);
      for (int i = 0; i < config.warmup; ++i) {
        bench.prepare();
        bench.run(options);
      }
      std::vector<double> times(static_cast<std::size_t>(config.iterations));
      std::int64_t wrong = 0;
      const auto sent_before = comm.data_bytes_sent();
      for (auto& t : times) {
        bench.prepare();
        transport.barrier(timeout);
        const auto start = Clock::now();
        bench.run(options);
        t = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        wrong = std::max<std::int64_t>(wrong, static_cast<std::int64_t>(bench.count_wrong()));
      }
      std::vector<double> sent{static_cast<double>(comm.data_bytes_sent() - sent_before) /
                               config.iterations};
      // Per iteration, the slowest rank's time is the collective's time.
      allreduce_values<double>(transport, times, ReduceOp::max, timeout);
      allreduce_values<double>(transport, sent, ReduceOp::max, timeout);
      std::vector<std::int64_t> wrong_total{wrong};
      allreduce_values<std::int64_t>(transport, wrong_total, ReduceOp::sum, timeout);

      std::sort(times.begin(), times.end());
      BenchRow row;
      row.bytes = total_bytes;
      row.count = bench.total_elements();
      row.algorithm = algorithm;
      row.median_us = median(times);
      row.p99_us = percentile(times, 0.99);
      row.algbw_gbps = row.median_us > 0 ? static_cast<double>(total_bytes) / (row.median_us * 1e3) : 0;
      row.busbw_gbps = row.algbw_gbps * bus_factor(config.operation, comm.size());
      if (algorithm != Algorithm::native) row.sent_bytes_per_rank = sent[0];
      row.wrong = static_cast<std::size_t>(wrong_total[0]);
      row.checked = bench.checkable();
      rows.push_back(row);
    }
    if (bytes > config.max_bytes / config.step_factor) break;
    bytes *= config.step_factor;
  }
  return rows;
}

}  // namespace qccl::tools
