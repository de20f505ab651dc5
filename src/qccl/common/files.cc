#include "qccl/common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "qccl/common/errors.h"
#include "qccl/common/readable_file.h"

namespace qccl {
namespace {

namespace fs = std::filesystem;

// The system's text for `error`, with a hint where one helps.
std::string reason(int error) {
  std::string text = std::system_category().message(error);
  if (error == ENOSPC) text += " (disk full?)";
  if (error == EDQUOT) text += " (disk quota exceeded?)";
  if (error == EFBIG) text += " (file size limit, see ulimit -f)";
  return text;
}

// Errors of opening that say the path itself is wrong, not the device.
bool bad_path(int error) {
  switch (error) {
    case ENOENT: case ENOTDIR: case EACCES: case EPERM: case EISDIR: case EROFS:
    case ENAMETOOLONG: case ELOOP: case EEXIST:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void fail_to_open(const std::string& path, int error, std::string_view what) {
  const std::string message = "cannot write " + std::string(what) + "'" + path + "': " +
                              reason(error);
  if (bad_path(error)) throw InvalidArgument(message + "; check the path and its directory");
  throw IoError(message);
}

// Writes all of `bytes` to `fd`, retrying short writes; returns 0 or errno.
int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

int fsync_directory_of(const std::string& path) {
  const auto parent = fs::path(path).parent_path();
  const int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// Owns a file descriptor.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  // Closes now; returns 0 or errno (a deferred write error shows here).
  int close() {
    const int error = ::close(fd_) == 0 ? 0 : errno;
    fd_ = -1;
    return error;
  }

 private:
  int fd_;
};

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes) {
  // The rename would replace a directory's entry, a device or a pipe with a
  // regular file: as root, `--output /dev/null` would replace /dev/null.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    throw InvalidArgument("cannot write '" + path + "': it exists and is not a regular file "
                          "(a directory, device or pipe), which would be replaced");
  }
  const std::string partial = path + ".partial";
  Descriptor file(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.get() < 0) fail_to_open(path, errno, "");
  int error = write_all(file.get(), bytes);
  std::string step = "write";
  if (error == 0 && ::fsync(file.get()) != 0) error = errno, step = "flush (fsync)";
  if (const int closed = file.close(); error == 0 && closed != 0) error = closed, step = "close";
  if (error == 0 && ::rename(partial.c_str(), path.c_str()) != 0) {
    error = errno;
    step = "rename '" + partial + "' to";
  }
  if (error != 0) {
    ::unlink(partial.c_str());
    throw IoError("could not " + step + " '" + path + "': " + reason(error) +
                  "; its previous contents, if any, are unchanged");
  }
  if (const int synced = fsync_directory_of(path); synced != 0) {
    throw IoError("wrote '" + path + "' but could not flush its directory: " + reason(synced));
  }
}

std::string read_whole_file(const std::string& path) {
  ReadableFile file(path);
  std::string bytes(file.size(), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(file.fd(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw InvalidArgument("could not read '" + path + "': " +
                            std::system_category().message(errno));
    }
    if (n == 0) break;  // it shrank since it was opened
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}


LineFile::LineFile(const std::string& path, bool truncate) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0),
               0644);
  if (fd_ < 0) fail_to_open(path, errno, "the log ");
  struct stat status {};
  if (::fstat(fd_, &status) == 0 && S_ISREG(status.st_mode)) {
    regular_ = true;
    size_ = status.st_size;
  }
}

LineFile::~LineFile() {
  if (fd_ >= 0) ::close(fd_);
}

// One write per line, so a reader never sees a line in pieces; a short
// write followed by an error (disk full part-way through the line) is cut
// back to the last whole line.
void LineFile::append(std::string_view line) {
  std::string whole(line);
  whole += '\n';
  const int error = write_all(fd_, whole);
  if (error != 0) {
    const bool cut = regular_ && ::ftruncate(fd_, size_) == 0;
    throw IoError("could not write to '" + path_ + "': " + reason(error) +
                  (cut ? "; it ends with the last whole line" : ""));
  }
  size_ += static_cast<off_t>(whole.size());
}

void LineFile::sync() {
  if (regular_ && ::fsync(fd_) != 0) {
    throw IoError("could not flush '" + path_ + "' to the disk: " + reason(errno));
  }
}

void check_can_replace(const std::string& path, std::string_view what) {
  const std::string named = std::string(what) + " '" + path + "'";
  std::error_code error;
  const auto status = fs::status(path, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw InvalidArgument("cannot write " + named + ": it exists and is not a regular file");
  }
  const std::string probe = path + ".partial";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw InvalidArgument("cannot write " + named + ": " + reason(errno) +
                          "; check the path and its directory");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_can_append(const std::string& path, std::string_view what) {
  const std::string named = std::string(what) + " '" + path + "'";
  std::error_code error;
  if (fs::is_directory(path, error)) {
    throw InvalidArgument("cannot write " + named + ": it is a directory");
  }
  const bool existed = fs::exists(path, error);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | (existed ? 0 : O_CREAT),
                        0644);
  if (fd < 0) {
    throw InvalidArgument("cannot write " + named + ": " + reason(errno) +
                          "; check the path and its directory");
  }
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
}

void check_can_write_into(const std::string& dir, std::string_view what,
                          const std::string& probe_name) {
  const std::string named = std::string(what) + " '" + dir + "'";
  std::error_code error;
  fs::create_directories(dir, error);
  std::error_code unused;
  if (!fs::is_directory(dir, unused)) {
    throw InvalidArgument("cannot write into " + named + ": " +
                          (error ? error.message() : std::string("it is not a directory")));
  }
  const std::string probe = (fs::path(dir) / probe_name).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw InvalidArgument("cannot write into " + named + ": " + reason(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace qccl
