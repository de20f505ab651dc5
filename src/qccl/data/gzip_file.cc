#include "qccl/data/gzip_file.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "qccl/common/errors.h"
#include "qccl/common/readable_file.h"

namespace qccl::data {
namespace {

// Deflate's largest expansion of its input (zlib's technical notes: about
// 1032:1), plus room for a gzip header.
constexpr std::uint64_t kMaxExpansion = 1032;
constexpr std::uint64_t kSlack = 1024;

}  // namespace

struct GzipReader::Handle {
  gzFile file = nullptr;
  ~Handle() {
    if (file != nullptr) gzclose(file);
  }
};

GzipReader::GzipReader(const std::string& path, const std::string& missing_hint)
    : path_(path), handle_(std::make_unique<Handle>()) {
  ReadableFile file(path, missing_hint);
  max_bytes_ = file.size() * kMaxExpansion + kSlack;
  handle_->file = gzdopen(file.fd(), "rb");
  if (handle_->file == nullptr) throw InvalidArgument("cannot read '" + path + "' (out of memory)");
  file.release();  // gzclose closes it now
}

GzipReader::~GzipReader() = default;

std::vector<unsigned char> GzipReader::read_exact(std::size_t count, const std::string& what) {
  std::vector<unsigned char> bytes(count);
  std::size_t got = 0;
  while (got < count) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(count - got, INT_MAX));
    const int n = gzread(handle_->file, bytes.data() + got, chunk);
    if (n < 0) throw InvalidArgument("'" + path_ + "' is not a valid gzip file (corrupt data)");
    if (n == 0) {
      throw InvalidArgument("'" + path_ + "' is truncated: expected " + what + ", found " +
                            std::to_string(got) + " of " + std::to_string(count) + " bytes");
    }
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

bool GzipReader::at_end() {
  unsigned char probe = 0;
  const int n = gzread(handle_->file, &probe, 1);
  if (n < 0) throw InvalidArgument("'" + path_ + "' is not a valid gzip file (corrupt data)");
  return n == 0;
}

}  // namespace qccl::data
