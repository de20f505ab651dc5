// The machine a measurement ran on, in words, for the reports that print
// timings: "AMD EPYC 7B13, 2 cores".
#pragma once

#include <string>

namespace qccl::tools {

// The first processor's model name from /proc/cpuinfo ("unknown CPU" where
// it cannot be read) and the cores this process may use.
std::string cpu_description();

}  // namespace qccl::tools
