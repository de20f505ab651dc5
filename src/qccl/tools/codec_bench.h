// `qccl bench codec`: single-thread encode, decode and hop-reduce throughput
// of codecs, each next to memcpy of the same bytes timed in the same loop,
// and one rank's whole step.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qccl/codecs/tensor_layout.h"

namespace qccl::tools {

// The whole vector as one matrix, rows × (count / rows), rows the largest
// divisor of count not above √count (one dimension when that is 1): what
// PowerSGD compresses; every other codec sees one tensor, as without a
// layout. The benchmark and the catalogue size their codecs on it.
TensorLayout matrix_layout(std::size_t count);

struct CodecBenchConfig {
  std::vector<std::string> codecs;  // specs
  std::size_t bytes = std::size_t{64} << 20;  // fp32 input per call
  int iterations = 10;
};

struct CodecBenchRow {
  std::string spec;
  std::size_t wire_bytes = 0;  // one rank's encoding
  double memcpy_gbps = 0;      // S / t, GB = 1e9 bytes, fp32 input bytes S
  double encode_gbps = 0;      // local norm + encode
  double decode_gbps = 0;
  double reduce_gbps = 0;      // one hop: combine two encodings (0: none, allgather codec)
  // memcpy time / (encode + decode time): 1.0 means as fast as a copy.
  double encode_decode_vs_memcpy = 0;
  // One rank's whole allreduce-mean step (selection, encode, decode, state
  // updates, its exchange with itself) over the vector as one matrix.
  double step_gbps = 0;
};

std::vector<CodecBenchRow> run_codec_bench(const CodecBenchConfig& config);
void print_codec_table(std::ostream& out, const CodecBenchConfig& config,
                       const std::vector<CodecBenchRow>& rows);
nlohmann::json codec_rows_to_json(const CodecBenchConfig& config,
                                  const std::vector<CodecBenchRow>& rows);

}  // namespace qccl::tools
