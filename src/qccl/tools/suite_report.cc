#include "qccl/tools/suite_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

using Cluster = std::pair<int, double>;  // hosts, link rate (0: unshaped)

std::string cluster_name(const Cluster& c) {
  return std::to_string(c.first) + " hosts, " + rate_name(c.second);
}

std::string file_tag(const Cluster& c) {
  std::string rate = rate_name(c.second);
  std::string tag;
  for (char ch : rate) {
    if (ch == ' ') continue;
    tag += ch == '/' ? 'p' : ch;
  }
  return "h" + std::to_string(c.first) + "-" + tag;
}

std::string format(const char* pattern, double value) {
  char text[32];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Rows worth showing: qccl's algorithms of every run, and MPI fp32 once per
// cluster (from the plain fp32 run when there is one).
bool shown(const SuiteRow& row) {
  return row.algorithm != "native" || row.run == "fp32" || row.mpi_codec;
}

// The cell "3.83× (86%)": speed-up over MPI fp32 in the same run, wire fraction.
std::string cell(const SuiteRow& row) {
  std::string text = row.speedup ? format("%.2f×", *row.speedup) : "-";
  if (row.wire_fraction) text += format(" (%.0f%%)", 100 * *row.wire_fraction);
  if (row.wrong) text += " WRONG";
  return text;
}

}  // namespace

double summary_bytes(const SuiteData& data) {
  double largest = 0;
  for (const auto& r : data.rows) {
    if (r.bytes == 64.0 * 1024 * 1024) return r.bytes;
    largest = std::max(largest, r.bytes);
  }
  return largest;
}

namespace {

// The clusters and series a report shows, and the size of its summary.
struct SuiteLayout {
  std::set<Cluster> clusters;
  std::vector<std::string> series;  // in first-seen order
  double size = 0;
};

SuiteLayout suite_layout(const SuiteData& data) {
  SuiteLayout layout;
  for (const auto& r : data.rows) {
    layout.clusters.insert({r.hosts, r.link_rate_bps});
    const auto name = series_name(r);
    if (shown(r) && std::find(layout.series.begin(), layout.series.end(), name) == layout.series.end()) {
      layout.series.push_back(name);
    }
  }
  layout.size = summary_bytes(data);
  return layout;
}

// The row of `series` on cluster `c` at size `bytes`, if shown.
const SuiteRow* find_row(const SuiteData& data, const std::string& series, const Cluster& c,
                         double bytes) {
  const SuiteRow* found = nullptr;
  for (const auto& r : data.rows) {
    if (shown(r) && series_name(r) == series && r.hosts == c.first &&
        r.link_rate_bps == c.second && r.bytes == bytes) {
      found = &r;
    }
  }
  return found;
}

// "| series | cluster | ... |" and its rule.
void write_table_head(std::ostream& md, const std::string& first,
                      const std::vector<std::string>& columns) {
  md << "| " << first << " |";
  for (const auto& column : columns) md << " " << column << " |";
  md << "\n| --- |";
  for (std::size_t i = 0; i < columns.size(); ++i) md << " --- |";
  md << "\n";
}

void write_summary_table(std::ostream& md, const SuiteData& data, const SuiteLayout& layout) {
  md << "# Benchmark suite results\n\n"
     << "Allreduce of an fp32 vector: qccl's ring and halving-doubling, plain and with each codec, next to "
        "MPI_Allreduce fp32 (out of place) measured in the same run, on emulated clusters "
        "(`scripts/cluster`: one MPI rank per network namespace, links shaped with tc tbf in "
        "both directions). A cell reads `speed-up over MPI fp32 (fraction of the wire bound)`; "
        "the wire bound is the bytes a rank sends at the link rate (for MPI: a bandwidth-optimal "
        "algorithm's 2(n-1)/n·S).\n\n";
  md << "## " << format_bytes(static_cast<std::size_t>(layout.size)) << " allreduce\n\n";
  std::vector<std::string> names;
  for (const auto& c : layout.clusters) names.push_back(cluster_name(c));
  write_table_head(md, "series", names);
  for (const auto& name : layout.series) {
    md << "| " << name << " |";
    for (const auto& c : layout.clusters) {
      const SuiteRow* r = find_row(data, name, c, layout.size);
      md << " " << (r ? cell(*r) : std::string()) << " |";
    }
    md << "\n";
  }
}

// One cluster's table of every size, and its plot of time against size;
// returns the plot's path.
std::string write_cluster_section(std::ostream& md, const SuiteData& data,
                                  const SuiteLayout& layout, const Cluster& c,
                                  const std::string& directory) {
  std::set<double> sizes;
  for (const auto& r : data.rows) {
    if (r.hosts == c.first && r.link_rate_bps == c.second) sizes.insert(r.bytes);
  }
  md << "\n## " << cluster_name(c) << "\n\nMedian time in ms, then " << "the cell as above.\n\n";
  write_table_head(md, "size", layout.series);
  PlotPanel panel{cluster_name(c), "message size S (bytes of fp32)", "median time (ms)", true, true,
                  {}};
  for (const auto& name : layout.series) panel.series.push_back({name, {}});
  for (double s : sizes) {
    md << "| " << format_bytes(static_cast<std::size_t>(s)) << " |";
    for (std::size_t k = 0; k < layout.series.size(); ++k) {
      std::string text;
      for (const auto& r : data.rows) {  // the last match is the cell; every one a point
        if (shown(r) && series_name(r) == layout.series[k] && r.hosts == c.first &&
            r.link_rate_bps == c.second && r.bytes == s) {
          text = format("%.3g", r.median_us / 1e3) + " · " + cell(r);
          panel.series[k].points.emplace_back(s, r.median_us / 1e3);
        }
      }
      md << " " << text << " |";
    }
    md << "\n";
  }
  const std::string plot = directory + "/time-" + file_tag(c) + ".svg";
  write_file_atomically(plot, render_svg({panel}));
  return plot;
}

// Speed-up over MPI fp32 against the link rate, for one host count;
// returns the plot's path.
std::string write_speedup_plot(const SuiteData& data, const SuiteLayout& layout, int hosts,
                               const std::string& directory) {
  PlotPanel panel{std::to_string(hosts) + " hosts, " + format_bytes(static_cast<std::size_t>(layout.size)),
                  "link rate (bit/s)", "speed-up over MPI fp32", false, true, {}};
  for (const auto& name : layout.series) {
    PlotSeries line{name, {}};
    for (const auto& r : data.rows) {
      if (shown(r) && series_name(r) == name && r.hosts == hosts && r.link_rate_bps > 0 &&
          r.bytes == layout.size && r.speedup) {
        line.points.emplace_back(r.link_rate_bps, *r.speedup);
      }
    }
    std::sort(line.points.begin(), line.points.end());
    panel.series.push_back(std::move(line));
  }
  const std::string plot = directory + "/speedup-h" + std::to_string(hosts) + ".svg";
  write_file_atomically(plot, render_svg({panel}));
  return plot;
}

void write_codec_table(std::ostream& md, const SuiteData& data) {
  if (data.codecs.empty()) return;
  md << "\n## Codec throughput (one thread, `qccl bench codec`)\n\n"
     << "| codec | encode GB/s | decode GB/s | hop reduce GB/s | memcpy GB/s | vs memcpy | ratio |\n"
     << "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& c : data.codecs) {
    const double both = 1 / (1 / c.encode_gbps + 1 / c.decode_gbps);
    md << "| " << c.codec << " | " << format("%.2f", c.encode_gbps) << " | "
       << format("%.2f", c.decode_gbps) << " | " << format("%.2f", c.reduce_gbps) << " | "
       << format("%.2f", c.memcpy_gbps) << " | " << format("%.3f", both / c.memcpy_gbps)
       << " | " << format("%.2f", c.wire_ratio) << " |\n";
  }
}

// suite.json: every row and the files it came from; returns its path.
std::string write_suite_json(const SuiteData& data, const std::string& directory) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : data.rows) {
    rows.push_back({{"run", r.label}, {"hosts", r.hosts},
                    {"link_rate_bps", r.link_rate_bps > 0 ? nlohmann::json(r.link_rate_bps) : nullptr},
                    {"codec", r.codec}, {"algorithm", r.algorithm}, {"bytes", r.bytes},
                    {"median_us", r.median_us},
                    {"sent_bytes_per_rank", r.sent_bytes_per_rank ? nlohmann::json(*r.sent_bytes_per_rank) : nullptr},
                    {"speedup_vs_mpi_fp32", r.speedup ? nlohmann::json(*r.speedup) : nullptr},
                    {"wire_fraction", r.wire_fraction ? nlohmann::json(*r.wire_fraction) : nullptr},
                    {"wrong", r.wrong}});
  }
  const std::string path = directory + "/suite.json";
  write_file_atomically(path, nlohmann::json{{"rows", rows}, {"files", data.files}}.dump(2) + "\n");
  return path;
}

}  // namespace

std::vector<std::string> write_suite_report(const SuiteData& data, const std::string& directory) {
  const SuiteLayout layout = suite_layout(data);
  std::ostringstream md;
  write_summary_table(md, data, layout);
  std::vector<std::string> files;
  for (const auto& c : layout.clusters) {
    files.push_back(write_cluster_section(md, data, layout, c, directory));
  }
  std::set<int> host_counts;
  for (const auto& c : layout.clusters) host_counts.insert(c.first);
  for (int hosts : host_counts) files.push_back(write_speedup_plot(data, layout, hosts, directory));
  write_codec_table(md, data);
  const std::string json_path = write_suite_json(data, directory);
  const std::string md_path = directory + "/results.md";
  write_file_atomically(md_path, md.str());
  files.insert(files.begin(), {md_path, json_path});
  return files;
}

}  // namespace qccl::tools
