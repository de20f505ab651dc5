// Writing files so that a failure is never silent and never leaves a torn
// file: result files are replaced whole or not at all, logs grow by whole
// lines, and every write is checked. Errors name the file; a full disk says
// "disk full?".
//
// Two kinds of failure, two exception types: a path that cannot be created
// at all (missing directory, no permission, a directory where a file should
// be) is a bad setting, InvalidArgument; a write that fails part-way (disk
// full, an I/O error, a file-size limit) is an IoError.
//
// Not an installed header, but exported from libqccl_core.so:
// libqccl_engines.so calls it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Writes `bytes` to `path` through `path`.partial: every write checked, the
// file flushed to the device (fsync) before the rename, and the directory
// after it, so that after a crash `path` holds either its old or its new
// contents, whole. On failure `path.partial` is removed and `path` is left
// as it was. A `path` that exists and is not a regular file (a device, a
// pipe, a directory) is refused, never replaced.
void write_file_atomically(const std::string& path, std::string_view bytes);

// The whole contents of `path`: a regular file only (readable_file.h), at
// most its size when opened. InvalidArgument naming it when it cannot be
// opened, is not a regular file, or fails part-way.
std::string read_whole_file(const std::string& path);

// A file that grows by whole lines (a JSON-lines log). A line that cannot be
// written whole is cut off again, so the file always ends with the last
// whole line, and IoError is thrown.
class LineFile {
 public:
  // Opens `path` for appending, creating it; with `truncate`, empties it.
  // InvalidArgument naming it when it cannot be opened.
  LineFile(const std::string& path, bool truncate);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  // Appends `line` and a newline in one write.
  void append(std::string_view line);
  // Flushes what was written to the device (fsync); IoError on failure.
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;  // only a regular file can be cut back
  off_t size_ = 0;        // its size after the last whole line
};

// Checks before a run, so that a path that cannot be written is refused
// before any work, not after it. Each throws InvalidArgument naming `what`
// and the path, and leaves no file behind.
//
// A file that will be replaced by write_file_atomically: it must be a
// regular file or not exist, in a directory where files can be created.
void check_can_replace(const std::string& path, std::string_view what);
// A file that will be appended to (LineFile).
void check_can_append(const std::string& path, std::string_view what);
// A directory that files will be written into; created (and kept) if it
// does not exist. `probe_name` names the test file (unique per writer).
void check_can_write_into(const std::string& dir, std::string_view what,
                          const std::string& probe_name);

}  // namespace qccl
QCCL_API_END
