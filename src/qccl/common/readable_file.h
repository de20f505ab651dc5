// Opening the project's inputs (datasets, config files, saved states) so
// that no input can hang a run or exhaust its memory: only a regular file
// is read — a FIFO, a device such as /dev/zero (directly or through a
// link), a socket or a directory is refused before a byte is read — and
// readers bound what they read by the file's size. A failure names the
// file and the system's reason, with the caller's hint only when the file
// does not exist (the hint says where it usually comes from).
//
// Not an installed header, but exported from libqccl_core.so:
// libqccl_engines.so calls it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class ReadableFile {
 public:
  // Opens `path` for reading (never blocking: a FIFO is refused, not
  // waited on). InvalidArgument naming the path, and `kind` where given
  // ("LibSVM file"): "cannot open KIND 'P': No such file or directory
  // (HINT)", "cannot open 'P': Permission denied", "'P' is a FIFO (named
  // pipe), not a regular file", ...
  explicit ReadableFile(const std::string& path, std::string_view missing_hint = {},
                        std::string_view kind = {});
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  int fd() const { return fd_; }
  // The file's size when it was opened.
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Hands the descriptor to a reader that closes it (gzdopen); this object
  // no longer closes it.
  int release();

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Checks, for readers that open the file themselves (std::ifstream), that
// `path` is a regular file this process can open; throws as ReadableFile.
void check_readable_file(const std::string& path, std::string_view missing_hint = {},
                         std::string_view kind = {});

}  // namespace qccl
QCCL_API_END
