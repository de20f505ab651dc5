// IDX files (the MNIST family's format): magic 0x0000 0x08 <rank>, then
// <rank> big-endian 32-bit dimensions, then unsigned bytes in row-major order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qccl::data {

struct IdxArray {
  std::vector<std::size_t> dims;
  std::vector<unsigned char> values;  // product of dims bytes
};

// Reads a gzipped IDX file of unsigned bytes with `rank` dimensions; throws
// InvalidArgument naming the file if it is missing (with `missing_hint`),
// not gzip, not IDX of that rank, truncated or followed by trailing data.
IdxArray read_idx_ubyte(const std::string& path, int rank, const std::string& missing_hint);

}  // namespace qccl::data
