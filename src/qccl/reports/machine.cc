#include "qccl/reports/machine.h"

#include <sched.h>

#include <fstream>
#include <thread>

namespace qccl::tools {

std::string cpu_description() {
  std::string model = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto start = colon == std::string::npos ? std::string::npos
                                                  : line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) model = line.substr(start);
    break;
  }
  // The CPUs this process may run on (as nproc counts them), else every
  // CPU of the machine.
  cpu_set_t set;
  CPU_ZERO(&set);
  const int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  const unsigned cores =
      allowed > 0 ? static_cast<unsigned>(allowed) : std::thread::hardware_concurrency();
  return model + ", " + std::to_string(cores) + (cores == 1 ? " core" : " cores");
}

}  // namespace qccl::tools
