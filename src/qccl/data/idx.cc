#include "qccl/data/idx.h"

#include <cstdint>

#include "qccl/common/errors.h"
#include "qccl/data/gzip_file.h"

namespace qccl::data {
namespace {

std::uint32_t big_endian(const std::vector<unsigned char>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | std::uint32_t{bytes[at + 3]};
}

}  // namespace

IdxArray read_idx_ubyte(const std::string& path, int rank, const std::string& missing_hint) {
  const auto bytes = read_gzip(path, missing_hint);
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (bytes.size() < header || big_endian(bytes, 0) != 0x00000800U + static_cast<std::uint32_t>(rank)) {
    throw InvalidArgument("'" + path + "' is not an IDX file of unsigned bytes with " +
                          std::to_string(rank) + " dimension(s)");
  }
  IdxArray array;
  std::size_t total = 1;
  for (int i = 0; i < rank; ++i) {
    array.dims.push_back(big_endian(bytes, 4 + 4 * static_cast<std::size_t>(i)));
    total *= array.dims.back();
  }
  if (bytes.size() != header + total) {
    throw InvalidArgument("'" + path + "' is truncated or has trailing data: expected " +
                          std::to_string(total) + " values, found " +
                          std::to_string(bytes.size() - header));
  }
  array.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

}  // namespace qccl::data
