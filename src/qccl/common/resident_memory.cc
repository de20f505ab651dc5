#include "qccl/common/resident_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace qccl {

bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

namespace {

// A "Name:   1234 kB" field of /proc/self/status, in bytes; 0 where absent.
std::uint64_t status_bytes(std::string_view field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.size() <= field.size() || line.compare(0, field.size(), field) != 0 ||
        line[field.size()] != ':') {
      continue;
    }
    std::istringstream fields(line.substr(field.size() + 1));
    std::uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return 0;
}

}  // namespace

std::uint64_t mapped_bytes() { return status_bytes("VmSize"); }

std::uint64_t peak_resident_bytes() {
  if (const std::uint64_t peak = status_bytes("VmHWM")) return peak;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace qccl
