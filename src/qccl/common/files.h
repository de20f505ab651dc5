// Writing result files so that a failed run never leaves a truncated file
// where the results should be.
#pragma once

#include <string>
#include <string_view>

namespace qccl {

// Writes `bytes` to `path` through `path`.partial and a rename. Throws
// InvalidArgument naming the path when it cannot be written.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace qccl
