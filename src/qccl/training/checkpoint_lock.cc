#include "qccl/training/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "qccl/common/errors.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/training/checkpoint_manifest.h"

namespace qccl::engines {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

// Who holds the lock, as its holder wrote it: "pid 1234 on host node-7".
std::string holder_of(int fd) {
  char text[512] = {};
  const auto n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "a process that has not yet written its pid and host" : holder;
}

// Opens and locks `path` without waiting; returns the open file, or throws
// InvalidArgument naming the holder or the cause.
int lock_file(const std::string& dir, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw InvalidArgument("cannot open the lock file '" + path + "': " + std::strerror(errno) +
                          "; check --checkpoint-dir '" + dir + "'");
  }
  int result = 0;
  do {
    result = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result == 0) return fd;
  const int error = errno;
  const std::string message =
      error == EWOULDBLOCK
          ? "--checkpoint-dir '" + dir + "' is in use by another run: " + holder_of(fd) +
                " holds its lock ('" + path + "'). Wait for that run to end or stop it, or "
                "choose another --checkpoint-dir"
          : "cannot lock '" + path + "': " + std::strerror(error) +
                "; choose a --checkpoint-dir on a file system that supports locks";
  ::close(fd);
  throw InvalidArgument(message);
}

}  // namespace

CheckpointLock::CheckpointLock(Communicator& comm, const std::string& dir) {
  if (dir.empty()) return;
  std::string failure;
  if (comm.rank() == 0) {
    const std::string path = dir + "/" + kCheckpointLockName;
    try {
      file_.fd = lock_file(dir, path);
      const std::string holder =
          "pid " + std::to_string(::getpid()) + " on host " + host_name() + "\n";
      const auto size = static_cast<ssize_t>(holder.size());
      if (::ftruncate(file_.fd, 0) != 0 ||
          ::pwrite(file_.fd, holder.data(), holder.size(), 0) != size) {
        failure = "cannot write the lock file '" + path + "': " + std::strerror(errno);
      }
    } catch (const InvalidArgument& e) {
      failure = e.what();
    }
  }
  if (const auto failures = failures_of_ranks(comm, "checkpoint directory locked", failure);
      !failures.empty()) {
    throw InvalidArgument("train: " + failures);
  }
}

// The text goes first, while the lock is still held: a run that finds the
// file later finds it unlocked and empty.
CheckpointLock::LockedFile::~LockedFile() {
  if (fd < 0) return;
  [[maybe_unused]] const int ignored = ::ftruncate(fd, 0);
  ::close(fd);
}

}  // namespace qccl::engines
