#include "qccl/tools/bench_report.h"

#include <cstdio>
#include <map>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

// busbw of each row divided by native's busbw at the same size, when measured.
std::vector<std::optional<double>> ratios_to_native(const std::vector<BenchRow>& rows) {
  std::map<std::size_t, double> native;
  for (const auto& r : rows) {
    if (r.algorithm == Algorithm::native) native[r.bytes] = r.busbw_gbps;
  }
  std::vector<std::optional<double>> ratios;
  for (const auto& r : rows) {
    auto it = native.find(r.bytes);
    if (it != native.end() && it->second > 0) {
      ratios.push_back(r.busbw_gbps / it->second);
    } else {
      ratios.push_back(std::nullopt);
    }
  }
  return ratios;
}

std::string line(const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

}  // namespace

std::optional<double> wire_fraction(const BenchContext& context, const BenchRow& row) {
  const double rate = context.config.link_rate_bps;
  if (rate <= 0 || row.median_us <= 0) return std::nullopt;
  double sent = row.sent_bytes_per_rank
                    ? *row.sent_bytes_per_rank
                    : bus_factor(context.config.operation, context.ranks) *
                          static_cast<double>(row.bytes);
  if (!row.sent_bytes_per_rank && context.config.native_codec) {  // MPI moved the encoding
    sent *= static_cast<double>(make_codec(context.config.codec)->wire_bytes(row.count)) /
            static_cast<double>(row.bytes);
  }
  return sent * 8 / rate / (row.median_us * 1e-6);
}

void print_table(std::ostream& out, const BenchContext& context, const std::vector<BenchRow>& rows) {
  const auto& c = context.config;
  out << "# qccl bench " << to_string(c.operation) << ": " << context.ranks << " ranks, "
      << context.transport << ", "
      << (c.codec.empty() ? std::string("fp32 sum")
                          : "codec " + c.codec + " on ring/halving-doubling, native = MPI " +
                                (c.native_codec ? "with the codec" : "fp32"))
      << ", " << (c.in_place ? "in place" : "out of place") << "\n"
      << "# " << c.iterations << " timed iterations after " << c.warmup
      << " warm-up; time per iteration = slowest rank; chunk " << format_bytes(c.chunk_bytes)
      << ", window " << (c.window == 0 ? std::string("auto") : std::to_string(c.window))
      << ", hierarchical "
      << (c.host_part_bytes == 0 ? std::string("in one part")
                                 : "in parts of " + format_bytes(c.host_part_bytes))
      << "\n"
      << "# algbw = size / time, busbw = algbw x " << line("%.3f", bus_factor(c.operation, context.ranks))
      << " (GB = 1e9 bytes); sent = bytes one rank sends per call; vs_native = busbw / native busbw\n";
  const bool wire = c.link_rate_bps > 0;
  if (wire) {
    out << "# links " << format_rate(c.link_rate_bps)
        << "; wire% = (sent/rank at the link rate) / median time (native: bus factor x size)\n";
  }
  out << "#\n";
  out << line("# %12s %11s %16s %12s %12s %9s %9s %9s %13s %7s", "size(B)", "count", "algo",
              "median(us)", "p99(us)", "algbw", "busbw", "vs_native", "sent/rank(B)", "#wrong")
      << (wire ? line(" %6s", "wire%") : "") << "\n";
  const auto ratios = ratios_to_native(rows);
  std::map<std::string, std::pair<double, int>> average;
  std::size_t wrong = 0, unchecked = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string algo(to_string(r.algorithm));
    const std::string ratio = ratios[i] ? line("%9.2f", *ratios[i]) : line("%9s", "-");
    const std::string sent =
        r.sent_bytes_per_rank ? line("%13.0f", *r.sent_bytes_per_rank) : line("%13s", "-");
    const std::string wrong_text = r.checked ? line("%7zu", r.wrong) : line("%7s", "-");
    out << line("  %12zu %11zu %16s %12.1f %12.1f %9.3f %9.3f %s %s %s", r.bytes, r.count,
                algo.c_str(), r.median_us, r.p99_us, r.algbw_gbps, r.busbw_gbps, ratio.c_str(),
                sent.c_str(), wrong_text.c_str());
    unchecked += r.checked ? 0 : 1;
    if (wire) out << line(" %5.1f%%", 100 * wire_fraction(context, r).value_or(0));
    out << "\n";
    average[algo].first += r.busbw_gbps;
    average[algo].second += 1;
    wrong += r.wrong;
  }
  out << "#\n# Avg bus bandwidth (GB/s):";
  for (Algorithm a : c.algorithms) {
    const auto& [total, count] = average[std::string(to_string(a))];
    if (count) out << " " << to_string(a) << " " << line("%.3f", total / count);
  }
  out << "\n# Out of bounds values : " << wrong << (wrong == 0 ? " OK" : " FAILED");
  if (unchecked > 0) {
    out << " (" << unchecked << " rows unchecked: the codec has no worst-case error bound)";
  }
  out << "\n";
}

nlohmann::json to_json(const BenchContext& context, const std::vector<BenchRow>& rows) {
  const auto& c = context.config;
  nlohmann::json j;
  j["operation"] = to_string(c.operation);
  j["codec"] = c.codec.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.codec);
  j["ranks"] = context.ranks;
  j["transport"] = context.transport;
  j["in_place"] = c.in_place;
  j["iterations"] = c.iterations;
  j["warmup"] = c.warmup;
  j["chunk_bytes"] = c.chunk_bytes;
  j["window"] = c.window;
  j["host_part_bytes"] = c.host_part_bytes;
  j["bus_factor"] = bus_factor(c.operation, context.ranks);
  j["link_rate_bps"] = c.link_rate_bps > 0 ? nlohmann::json(c.link_rate_bps) : nlohmann::json(nullptr);
  j["native_codec"] = c.native_codec;
  const auto ratios = ratios_to_native(rows);
  j["rows"] = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    nlohmann::json row{{"bytes", r.bytes},
                       {"count", r.count},
                       {"algorithm", to_string(r.algorithm)},
                       {"median_us", r.median_us},
                       {"p99_us", r.p99_us},
                       {"algbw_gbps", r.algbw_gbps},
                       {"busbw_gbps", r.busbw_gbps},
                       {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)}};
    row["sent_bytes_per_rank"] =
        r.sent_bytes_per_rank ? nlohmann::json(*r.sent_bytes_per_rank) : nlohmann::json(nullptr);
    row["vs_native"] = ratios[i] ? nlohmann::json(*ratios[i]) : nlohmann::json(nullptr);
    const auto fraction = wire_fraction(context, r);
    row["wire_fraction"] = fraction ? nlohmann::json(*fraction) : nlohmann::json(nullptr);
    j["rows"].push_back(row);
  }
  return j;
}

}  // namespace qccl::tools
