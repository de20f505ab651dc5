#include "qccl/tools/suite_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/tools/units.h"

namespace qccl::tools {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read '" + path.string() + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("'" + path.string() + "' is not valid JSON: " + e.what());
  }
}

std::optional<double> optional_number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? std::optional<double>(j[key].get<double>())
                                               : std::nullopt;
}

void load_allreduce(const std::filesystem::path& path, SuiteData& data) {
  const auto j = read_json(path);
  try {
    if (j.at("operation").get<std::string>() != "allreduce") return;
    const int hosts = j.at("ranks").get<int>();
    const double rate = optional_number(j, "link_rate_bps").value_or(0);
    const std::string codec =
        j.at("codec").is_null() ? "fp32" : CodecSpec::parse(j.at("codec").get<std::string>()).text();
    const bool native_codec = j.value("native_codec", false);
    for (const auto& r : j.at("rows")) {
      SuiteRow row;
      row.file = path.filename().string();
      row.run = codec;
      row.label = j.at("codec").is_null() ? "fp32" : j.at("codec").get<std::string>();
      row.hosts = hosts;
      row.link_rate_bps = rate;
      row.algorithm = r.at("algorithm").get<std::string>();
      // native is MPI_Allreduce on fp32 (the baseline), unless the run asked
      // MPI to run the codec.
      row.mpi_codec = row.algorithm == "native" && native_codec;
      row.codec = row.algorithm == "native" && !native_codec ? "fp32" : codec;
      row.bytes = r.at("bytes").get<double>();
      row.median_us = r.at("median_us").get<double>();
      row.sent_bytes_per_rank = optional_number(r, "sent_bytes_per_rank");
      row.speedup = optional_number(r, "vs_native");
      row.wire_fraction = optional_number(r, "wire_fraction");
      row.wrong = r.at("wrong").is_null() ? 0 : r.at("wrong").get<std::size_t>();
      data.rows.push_back(row);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("'" + path.string() + "' is not a qccl bench allreduce result: " +
                          e.what());
  }
}

void load_codecs(const std::filesystem::path& path, SuiteData& data) {
  const auto j = read_json(path);
  try {
    const double bytes = j.at("bytes").get<double>();
    for (const auto& r : j.at("rows")) {
      CodecThroughput c;
      c.codec = r.at("codec").get<std::string>();
      c.encode_gbps = r.at("encode_gbps").get<double>();
      c.decode_gbps = r.at("decode_gbps").get<double>();
      c.reduce_gbps = optional_number(r, "reduce_gbps").value_or(0);
      c.memcpy_gbps = r.at("memcpy_gbps").get<double>();
      c.wire_ratio = bytes / r.at("wire_bytes").get<double>();
      data.codecs.push_back(c);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("'" + path.string() + "' is not a qccl bench codec result: " + e.what());
  }
}

}  // namespace

SuiteData load_suite(const std::string& directory) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(directory)) {
    throw InvalidArgument("'" + directory + "' is not a directory of benchmark results");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  SuiteData data;
  for (const auto& path : files) {
    const std::string name = path.filename().string();
    if (name.rfind("allreduce-", 0) == 0 && path.extension() == ".json") {
      load_allreduce(path, data);
      data.files.push_back(path.string());
    } else if (name == "codec.json") {
      load_codecs(path, data);
      data.files.push_back(path.string());
    }
  }
  // MPI-with-codec rows: speed-up over the fp32 run's MPI, same cluster and size.
  for (auto& row : data.rows) {
    if (!row.mpi_codec) continue;
    row.speedup.reset();
    for (const auto& base : data.rows) {
      if (base.run == "fp32" && base.algorithm == "native" && base.hosts == row.hosts &&
          base.link_rate_bps == row.link_rate_bps && base.bytes == row.bytes) {
        row.speedup = base.median_us / row.median_us;
      }
    }
  }
  if (data.rows.empty()) {
    throw InvalidArgument("'" + directory + "' holds no allreduce-*.json results; run "
                          "scripts/bench-suite first");
  }
  return data;
}

std::string series_name(const SuiteRow& row) {
  if (row.mpi_codec) return "MPI " + row.label;
  if (row.algorithm == "native") return "MPI fp32";
  return row.label + " " + row.algorithm;
}

std::string rate_name(double link_rate_bps) {
  return link_rate_bps > 0 ? format_rate(link_rate_bps) : "unshaped";
}

}  // namespace qccl::tools
