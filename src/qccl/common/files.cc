#include "qccl/common/files.h"

#include <filesystem>
#include <fstream>

#include "qccl/common/errors.h"

namespace qccl {

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw InvalidArgument("cannot write '" + path + "': check the output directory");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw InvalidArgument("could not write all of '" + path + "' (disk full?)");
  }
  std::filesystem::rename(partial, path);
}

}  // namespace qccl
