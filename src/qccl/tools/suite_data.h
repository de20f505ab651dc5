// The benchmark suite's measurements as scripts/bench-suite leaves them in a
// results folder: one `qccl bench allreduce --json` file per (hosts, link
// rate, codec) run, and `qccl bench codec --json` in codec.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace qccl::tools {

struct SuiteRow {
  std::string file;   // the result file's name, e.g. "allreduce-h4-1gbit-fp32.json"
  std::string run;    // the run's codec spec, or "fp32" for the plain-sum run
  std::string label;  // the codec as the run was asked for it ("global-qsgd:bits=4")
  int hosts = 0;
  double link_rate_bps = 0;  // 0: unshaped
  std::string codec;         // canonical spec; "fp32" for the plain sum
  std::string algorithm;     // ring, halving-doubling, native
  double bytes = 0;          // S, fp32 bytes of the vector
  double median_us = 0;
  std::optional<double> sent_bytes_per_rank;  // unset for native
  // vs MPI fp32 native in the same run; for MPI with a codec (fp16), vs the
  // plain fp32 run's MPI on the same cluster and size
  std::optional<double> speedup;
  bool mpi_codec = false;  // a native row that ran the codec through MPI
  std::optional<double> wire_fraction;
  std::size_t wrong = 0;
};

struct CodecThroughput {
  std::string codec;  // canonical spec
  double encode_gbps = 0, decode_gbps = 0, reduce_gbps = 0, memcpy_gbps = 0;
  double wire_ratio = 1;  // fp32 bytes / wire bytes
};

struct SuiteData {
  std::vector<SuiteRow> rows;
  std::vector<CodecThroughput> codecs;
  std::vector<std::string> files;  // what was read
};

// Reads every allreduce-*.json and codec.json in `directory`. Throws
// InvalidArgument naming the file for anything unreadable or malformed, and
// when there is no allreduce file at all.
SuiteData load_suite(const std::string& directory);

// A row's series name, e.g. "global-qsgd:bits=4 ring", "MPI fp32", "MPI fp16".
std::string series_name(const SuiteRow& row);
// "1 Gbit/s" or "unshaped".
std::string rate_name(double link_rate_bps);

}  // namespace qccl::tools
