#include "qccl/common/page_faults.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::uint64_t minor_faults(int who) {
  rusage usage{};
  if (getrusage(who, &usage) != 0) {
    throw Error(std::string("getrusage failed: ") + std::strerror(errno));
  }
  return static_cast<std::uint64_t>(usage.ru_minflt);
}

}  // namespace

std::uint64_t thread_minor_faults() { return minor_faults(RUSAGE_THREAD); }
std::uint64_t process_minor_faults() { return minor_faults(RUSAGE_SELF); }

}  // namespace qccl
