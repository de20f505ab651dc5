// Writing result files so that a failed run never leaves a truncated file
// where the results should be.
// Not an installed header, but exported from libqccl_core.so: libqccl_engines.so
// calls it.
#pragma once

#include <string>
#include <string_view>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Writes `bytes` to `path` through `path`.partial and a rename. Throws
// InvalidArgument naming the path when it cannot be written.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace qccl
QCCL_API_END
