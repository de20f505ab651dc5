#include "qccl/common/readable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

ReadableFile::ReadableFile(const std::string& path, std::string_view missing_hint,
                           std::string_view kind)
    : path_(path) {
  const std::string named = (kind.empty() ? "" : std::string(kind) + " ") + "'" + path + "'";
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of
  // waiting for one; it is then refused by its type below.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    std::string message = "cannot open " + named + ": " + std::system_category().message(error);
    if (error == ENOENT && !missing_hint.empty()) message += " (" + std::string(missing_hint) + ")";
    throw InvalidArgument(message);
  }
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode)) {
    const std::string what = S_ISREG(status.st_mode) ? "unreadable" : kind_of(status.st_mode);
    ::close(fd_);
    fd_ = -1;
    throw InvalidArgument(named + " is " + what + ", not a regular file; pass the file itself");
  }
  size_ = static_cast<std::uint64_t>(status.st_size);
  // Regular files never block; reads go back to the ordinary mode.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

ReadableFile::~ReadableFile() {
  if (fd_ >= 0) ::close(fd_);
}

int ReadableFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void check_readable_file(const std::string& path, std::string_view missing_hint,
                         std::string_view kind) {
  ReadableFile file(path, missing_hint, kind);
}

}  // namespace qccl
