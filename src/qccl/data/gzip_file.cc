#include "qccl/data/gzip_file.h"

#include <zlib.h>

#include <array>
#include <memory>

#include "qccl/common/errors.h"

namespace qccl::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

}  // namespace

std::vector<unsigned char> read_gzip(const std::string& path, const std::string& missing_hint) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw InvalidArgument("cannot open '" + path + "' (" + missing_hint + ")");
  std::vector<unsigned char> bytes;
  std::array<unsigned char, 1 << 16> buffer;
  while (true) {
    const int got = gzread(file.get(), buffer.data(), buffer.size());
    if (got < 0) throw InvalidArgument("'" + path + "' is not a valid gzip file (corrupt data)");
    if (got == 0) break;
    bytes.insert(bytes.end(), buffer.begin(), buffer.begin() + got);
  }
  return bytes;
}

}  // namespace qccl::data
