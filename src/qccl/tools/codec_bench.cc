#include "qccl/tools/codec_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/transport/local_transport.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

double seconds_of(const std::function<void()>& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Gradient-like data: smooth magnitudes over many binades, both signs.
std::vector<float> sample_data(std::size_t count) {
  std::vector<float> data(count);
  std::uint64_t x = 0x243F6A8885A308D3ULL;
  for (auto& v : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double u = static_cast<double>(x >> 11) / 9007199254740992.0;
    v = static_cast<float>((u - 0.5) * std::exp2(-static_cast<double>(x & 15)));
  }
  return data;
}

// One rank's whole allreduce-mean step, timed: its exchange with itself,
// the codec's selection, encode and decode, and its state updates. This is
// what the encode and decode columns miss for codecs whose work is not all
// in their Reduction (PowerSGD's products, error feedback, DGC's momentum).
std::vector<double> time_steps(const std::string& spec, const TensorLayout& layout,
                               std::span<const float> input, int iterations) {
  std::vector<double> times;
  run_in_process(1, [&](Transport& transport) {
    Communicator comm(transport);
    auto codec = make_codec(spec);
    codec->set_layout(layout);
    std::vector<float> data(input.size());
    for (int i = 0; i < iterations; ++i) {
      std::copy(input.begin(), input.end(), data.begin());
      times.push_back(seconds_of([&] { codec->allreduce_mean(comm, data); }));
      feed_sgd_step(*codec, data);
    }
  });
  return times;
}

}  // namespace

std::vector<CodecBenchRow> run_codec_bench(const CodecBenchConfig& config) {
  if (config.iterations < 1) throw InvalidArgument("bench codec: --iters must be at least 1");
  const std::size_t count = config.bytes / sizeof(float);
  if (count == 0) throw InvalidArgument("bench codec: --size must be at least 4 bytes");
  const auto input = sample_data(count);
  std::vector<float> output(count), copy(count);
  const TensorLayout layout = matrix_layout(count);
  std::vector<CodecBenchRow> rows;
  for (const auto& text : config.codecs) {
    auto codec = make_codec(text);
    codec->set_layout(layout);
    CodecBenchRow row;
    row.spec = codec->spec();
    row.wire_bytes = codec->wire_bytes(count);
    // Decode needs a complete aggregation, which one rank's encoding is for
    // a 1-rank reduction, so encode and decode use that one; the hop reduce
    // combines two encodings of a 2-rank reduction. (The rank count changes
    // a codec's levels, not its kernels' cost.)
    feed_sgd_step(*codec, input);  // codecs that scale by the optimizer's history
    const double norm = local_norm(input, codec->norm_kind());
    // Encode is timed from the local norm through building the step's
    // reduction (where codecs that select or scale from the whole input,
    // such as Top-k, do that work) to the encoded bytes.
    auto single = codec->encoding_for(norm, 1, 0, Algorithm::ring, input);
    const auto pair = codec->encoding_for(norm, 2, 0, Algorithm::ring, input);
    std::vector<std::byte> encoded(single->max_encoded_bytes(count));
    std::vector<std::byte> a(pair->max_encoded_bytes(count)), b(a.size()), accum(a.size());
    const std::size_t a_bytes = pair->encode(input, 0, a);
    const std::size_t b_bytes = pair->encode(input, 0, b);
    std::vector<double> t_copy, t_encode, t_decode, t_reduce;
    std::size_t encoded_bytes = 0;
    for (int i = 0; i < config.iterations; ++i) {
      t_copy.push_back(seconds_of([&] { std::memcpy(copy.data(), input.data(), count * sizeof(float)); }));
      t_encode.push_back(seconds_of([&] {
        single = codec->encoding_for(local_norm(input, codec->norm_kind()), 1, 0,
                                      Algorithm::ring, input);
        encoded_bytes = single->encode(input, 0, encoded);
      }));
      t_decode.push_back(seconds_of([&] {
        single->decode(std::span(encoded).first(encoded_bytes), 0, output);
      }));
      Reduction* reduction = pair->in_transit();  // compressed-domain codecs only
      if (codec->aggregation() != Aggregation::compressed_domain || reduction == nullptr) continue;
      std::memcpy(accum.data(), a.data(), a_bytes);
      t_reduce.push_back(seconds_of([&] {
        reduction->reduce(std::span(b).first(b_bytes), accum, a_bytes, {0, count, 0, 0});
      }));
    }
    const double s = static_cast<double>(count * sizeof(float));
    const double copy_s = median(t_copy), enc_s = median(t_encode), dec_s = median(t_decode);
    row.memcpy_gbps = s / copy_s / 1e9;
    row.encode_gbps = s / enc_s / 1e9;
    row.decode_gbps = s / dec_s / 1e9;
    row.reduce_gbps = t_reduce.empty() ? 0.0 : s / median(t_reduce) / 1e9;
    row.encode_decode_vs_memcpy = copy_s / (enc_s + dec_s);
    row.step_gbps = s / median(time_steps(text, layout, input, config.iterations)) / 1e9;
    rows.push_back(row);
  }
  return rows;
}

void print_codec_table(std::ostream& out, const CodecBenchConfig& config,
                       const std::vector<CodecBenchRow>& rows) {
  out << "# qccl bench codec: " << format_bytes(config.bytes) << " of fp32 per call, one thread, "
      << config.iterations << " iterations (medians); GB/s of fp32 input (GB = 1e9 bytes)\n"
      << "# encode includes the local norm; vs_memcpy = memcpy time / (encode + decode time)\n"
      << "# the vector is one matrix (PowerSGD compresses it); step: one rank's whole allreduce "
         "mean\n#\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %-50s %10s %9s %9s %9s %9s %10s %9s\n", "codec", "wire(B)",
                "memcpy", "encode", "decode", "reduce", "vs_memcpy", "step");
  out << line;
  for (const auto& r : rows) {
    char reduce[16];
    if (r.reduce_gbps > 0) {
      std::snprintf(reduce, sizeof reduce, "%9.2f", r.reduce_gbps);
    } else {
      std::snprintf(reduce, sizeof reduce, "%9s", "-");  // aggregates by allgather
    }
    std::snprintf(line, sizeof line, "  %-50s %10zu %9.2f %9.2f %9.2f %s %10.3f %9.2f\n",
                  r.spec.c_str(), r.wire_bytes, r.memcpy_gbps, r.encode_gbps, r.decode_gbps,
                  reduce, r.encode_decode_vs_memcpy, r.step_gbps);
    out << line;
  }
}

nlohmann::json codec_rows_to_json(const CodecBenchConfig& config,
                                  const std::vector<CodecBenchRow>& rows) {
  nlohmann::json j{{"bytes", config.bytes}, {"iterations", config.iterations}};
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    j["rows"].push_back({{"codec", r.spec},
                         {"wire_bytes", r.wire_bytes},
                         {"memcpy_gbps", r.memcpy_gbps},
                         {"encode_gbps", r.encode_gbps},
                         {"decode_gbps", r.decode_gbps},
                         {"reduce_gbps", r.reduce_gbps > 0 ? nlohmann::json(r.reduce_gbps)
                                                           : nlohmann::json(nullptr)},
                         {"encode_decode_vs_memcpy", r.encode_decode_vs_memcpy},
                         {"step_gbps", r.step_gbps}});
  }
  return j;
}

TensorLayout matrix_layout(std::size_t count) {
  std::size_t rows = 1;
  for (std::size_t r = 1; r * r <= count; ++r) {
    if (count % r == 0) rows = r;
  }
  const std::vector<std::string> names{"bench"};
  const auto elements = static_cast<std::int64_t>(count);
  const std::vector<std::vector<std::int64_t>> shapes{
      rows > 1 ? std::vector<std::int64_t>{static_cast<std::int64_t>(rows),
                                           elements / static_cast<std::int64_t>(rows)}
               : std::vector<std::int64_t>{elements}};
  return TensorLayout::of_shapes(names, shapes);
}

}  // namespace qccl::tools
