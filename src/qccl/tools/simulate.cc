#include "qccl/tools/simulate.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/common/readable_file.h"
#include "qccl/transport/local_transport.h"

namespace qccl::tools {

static_assert(std::endian::native == std::endian::little,
              "simulate reads and writes little-endian fp32 as raw bytes");

namespace {

std::vector<float> read_input(const std::string& path, int ranks) {
  check_readable_file(path, {}, "the input file");  // a regular file: its size is known, nothing blocks
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InvalidArgument("simulate: cannot open input file '" + path + "'");
  const auto bytes = static_cast<std::size_t>(in.tellg());
  const std::size_t unit = sizeof(float) * static_cast<std::size_t>(ranks);
  if (bytes == 0 || bytes % unit != 0) {
    throw InvalidArgument("simulate: input file '" + path + "' has " + std::to_string(bytes) +
                          " bytes, which is not a non-zero multiple of 4·ranks = " +
                          std::to_string(unit) + "; it must hold ranks·d fp32 values, rank-major");
  }
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  if (!in) throw InvalidArgument("simulate: could not read all of '" + path + "'");
  return values;
}

std::vector<float> synthetic_input(int ranks, std::size_t d, std::uint64_t seed) {
  std::vector<float> values(static_cast<std::size_t>(ranks) * d);
  for (int r = 0; r < ranks; ++r) {
    const CounterRng rng(seed, 0, 0, static_cast<std::uint64_t>(r), RngStream::shared);
    for (std::size_t i = 0; i < d; ++i) {
      const std::uint64_t bits = rng.bits64(i);
      const float u = static_cast<float>(bits >> 40) * 0x1p-24f;  // [0, 1)
      values[static_cast<std::size_t>(r) * d + i] =
          (u - 0.5f) * std::ldexp(1.0f + 0.25f * static_cast<float>(r), -static_cast<int>(bits % 12));
    }
  }
  return values;
}

}  // namespace

SimulateSummary run_simulation(const SimulateConfig& config) {
  if (config.ranks < 1) throw InvalidArgument("simulate: --ranks must be at least 1");
  if (config.rounds < 1) throw InvalidArgument("simulate: --rounds must be at least 1");
  if (config.output.empty()) throw InvalidArgument("simulate: --output is required");
  const auto probe = make_codec(config.codec);  // validates before any reading
  if (config.synthetic > 0 && !config.input.empty()) {
    throw InvalidArgument("simulate: give either --input or --synthetic, not both");
  }
  if (config.synthetic == 0 && config.input.empty()) {
    throw InvalidArgument("simulate: give --input FILE (ranks·d fp32) or --synthetic D");
  }
  // The output replaces its file whole: never the input it reads (a link
  // or another spelling of the same path included).
  std::error_code same_error;
  if (!config.input.empty() && std::filesystem::exists(config.output) &&
      std::filesystem::equivalent(config.input, config.output, same_error)) {
    throw InvalidArgument("simulate: --output '" + config.output + "' is the --input file; "
                          "writing it would destroy the input: choose another --output");
  }
  const auto all = config.synthetic > 0 ? synthetic_input(config.ranks, config.synthetic, config.seed)
                                        : read_input(config.input, config.ranks);
  const std::size_t d = all.size() / static_cast<std::size_t>(config.ranks);
  std::vector<double> exact(d, 0.0);
  for (int r = 0; r < config.ranks; ++r) {
    for (std::size_t i = 0; i < d; ++i) exact[i] += all[static_cast<std::size_t>(r) * d + i];
  }
  for (auto& e : exact) e /= config.ranks;

  std::vector<float> results(static_cast<std::size_t>(config.rounds) * d);
  std::mutex sent_mutex;
  double most_sent = 0;
  run_in_process(config.ranks, [&](Transport& transport) {
    Communicator comm(transport);
    auto codec = make_codec(config.codec, {.seed = config.seed, .bucket = 0});
    CollectiveOptions options;
    options.algorithm = config.algorithm;
    const auto mine = std::span(all).subspan(static_cast<std::size_t>(comm.rank()) * d, d);
    const auto before = comm.data_bytes_sent();
    std::vector<float> data(d);
    for (int round = 0; round < config.rounds; ++round) {
      std::copy(mine.begin(), mine.end(), data.begin());
      codec->allreduce_mean(comm, data, options);
      feed_sgd_step(*codec, data);  // as SGD with step 1 would (IntSGD's scale)
      if (comm.rank() == 0) {
        std::copy(data.begin(), data.end(), results.begin() + static_cast<long>(round * d));
      }
    }
    std::lock_guard lock(sent_mutex);
    most_sent = std::max(most_sent, static_cast<double>(comm.data_bytes_sent() - before));
  });

  SimulateSummary summary;
  summary.codec = probe->spec();
  summary.ranks = config.ranks;
  summary.dimension = d;
  summary.rounds = config.rounds;
  double error = 0, magnitude = 0;
  for (std::size_t k = 0; k < results.size(); ++k) {
    const double e = results[k] - exact[k % d];
    error += e * e;
  }
  for (double e : exact) magnitude += e * e;
  summary.mean_squared_error = error / static_cast<double>(results.size());
  summary.relative_squared_error =
      magnitude > 0 ? summary.mean_squared_error / (magnitude / static_cast<double>(d)) : 0.0;
  summary.squared_error_per_round = error / config.rounds;
  double squared_norm = 0;
  for (float x : all) squared_norm += static_cast<double>(x) * x;
  summary.variance_bound = probe->variance_bound(squared_norm, d, config.ranks, config.algorithm);
  summary.bytes_sent_per_rank = most_sent / config.rounds;
  summary.fp32_ring_bytes = 2.0 * (config.ranks - 1) / config.ranks * static_cast<double>(d) * 4;
  write_file_atomically(config.output,
                        std::string_view(reinterpret_cast<const char*>(results.data()),
                                         results.size() * sizeof(float)));
  return summary;
}

void print_summary(std::ostream& out, const SimulateSummary& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "codec %s, %d ranks, d = %zu, %d rounds\n"
                "mean squared error vs the exact mean: %.6g (relative to the mean square of the "
                "exact mean: %.6g)\n"
                "bytes sent per rank per round: %.0f (an fp32 ring allreduce: %.0f, ratio %.3f)\n",
                s.codec.c_str(), s.ranks, s.dimension, s.rounds, s.mean_squared_error,
                s.relative_squared_error, s.bytes_sent_per_rank, s.fp32_ring_bytes,
                s.fp32_ring_bytes > 0 ? s.bytes_sent_per_rank / s.fp32_ring_bytes : 0.0);
  out << line;
  if (s.variance_bound) {
    std::snprintf(line, sizeof line,
                  "squared error per round E||result - mean||^2: %.6g; the codec's published bound "
                  "for these inputs: %.6g (ratio %.3g)\n",
                  s.squared_error_per_round, *s.variance_bound,
                  *s.variance_bound > 0 ? s.squared_error_per_round / *s.variance_bound : 0.0);
  } else {
    std::snprintf(line, sizeof line,
                  "squared error per round E||result - mean||^2: %.6g (no published bound for this "
                  "codec and setting)\n",
                  s.squared_error_per_round);
  }
  out << line;
}

}  // namespace qccl::tools
