#include "qccl/data/idx.h"

#include <cstdint>
#include <limits>

#include "qccl/common/errors.h"
#include "qccl/data/gzip_file.h"

namespace qccl::data {
namespace {

std::uint32_t big_endian(const std::vector<unsigned char>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | std::uint32_t{bytes[at + 3]};
}

}  // namespace

// The header first, then exactly the values it declares: a declared size
// the file cannot hold (beyond its largest decompressed size) is refused
// before anything is allocated for it.
IdxArray read_idx_ubyte(const std::string& path, int rank, const std::string& missing_hint) {
  GzipReader reader(path, missing_hint);
  const std::size_t header_bytes = 4 + 4 * static_cast<std::size_t>(rank);
  const std::string kind = "an IDX file of unsigned bytes with " + std::to_string(rank) +
                           " dimension(s)";
  const auto header = reader.read_exact(header_bytes, "the header of " + kind);
  if (big_endian(header, 0) != 0x00000800U + static_cast<std::uint32_t>(rank)) {
    throw InvalidArgument("'" + path + "' is not " + kind);
  }
  IdxArray array;
  std::uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    array.dims.push_back(big_endian(header, 4 + 4 * static_cast<std::size_t>(i)));
    total = array.dims.back() == 0 || total <= std::numeric_limits<std::uint64_t>::max() /
                                                   array.dims.back()
                ? total * array.dims.back()
                : std::numeric_limits<std::uint64_t>::max();
  }
  if (total > reader.max_decompressed_bytes()) {
    throw InvalidArgument("'" + path + "' declares " + std::to_string(total) +
                          " values, more than a file of its size can hold; it is damaged");
  }
  array.values = reader.read_exact(static_cast<std::size_t>(total),
                                   std::to_string(total) + " values");
  if (!reader.at_end()) {
    throw InvalidArgument("'" + path + "' has trailing data after its " + std::to_string(total) +
                          " values");
  }
  return array;
}

}  // namespace qccl::data
