// Whole-file reading of gzip-compressed (or plain) files, for the dataset
// readers.
#pragma once

#include <string>
#include <vector>

namespace qccl::data {

// The decompressed bytes of `path` (zlib reads plain files as they are).
// Throws InvalidArgument naming the file, with `missing_hint` appended when
// it cannot be opened, and when it is not valid gzip.
std::vector<unsigned char> read_gzip(const std::string& path, const std::string& missing_hint);

}  // namespace qccl::data
